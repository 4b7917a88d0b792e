import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'

/**
 * A mistake in a test's script is said where it is made, and a request is
 * always answered. A script that gave no reply used to leave the request
 * unanswered (the client under test waited until its own timeout), and a bad
 * dialect gave a `baseURL` ending in `undefined`.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const post = (f: FakeProvider) =>
  fetch(`${f.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
    // A guard against the old hang, not a timing: any answer comes at once.
    signal: AbortSignal.timeout(5000),
  })

it.each([
  [{ dialect: 'nope' }, /dialect must be one of/],
  [{ models: 'fake-model' }, /models must be an array/],
  [{ clock: {} }, /clock must be a Clock/],
  [{ reply: 5 }, /a reply must be/],
  // Ignored, a misspelt dialect left the fake speaking OpenAI to an Anthropic client.
  [{ dialcet: 'anthropic' }, 'unknown option "dialcet" (did you mean dialect?)'],
])('startFakeProvider(%j) is a TypeError naming the option', async (options, message) => {
  await expect(startFakeProvider(options as never)).rejects.toThrow(message)
})

it('enqueue and setReply refuse what is not a reply', async () => {
  fake = await startFakeProvider()
  const f = fake
  expect(() => f.enqueue(undefined as never)).toThrow(TypeError)
  expect(() => f.enqueue({ kind: 'txt', text: 'typo' } as never)).toThrow(/kind txt/)
  expect(() => f.setReply(null as never)).toThrow(TypeError)
  expect(f.queuedReplies).toBe(0)
  f.enqueue(reply.text('fine'), () => reply.hang())
  expect(f.queuedReplies).toBe(2)
})

it('rateLimit refuses a window it cannot keep: an unknown option, a forMs that is no number of ms', async () => {
  // `forMS` made the window end at NaN: never open, and no request was limited.
  fake = await startFakeProvider()
  const f = fake
  expect(() => f.rateLimit({ forMS: 1000 } as never)).toThrow(
    'unknown option "forMS" (did you mean forMs?)',
  )
  expect(() => f.rateLimit({ forMs: '1000' } as never)).toThrow(TypeError)
  expect(() => f.rateLimit({ forMs: -1 })).toThrow(/forMs/)
  expect(() => f.rateLimit({ forMs: 10_000, reply: 'nope' } as never)).toThrow(TypeError)
  f.rateLimit({ forMs: 10_000 })
  expect((await post(f)).status).toBe(429)
})

it.each([
  ['undefined', () => undefined, 'gave undefined'],
  ['a typo in kind', () => ({ kind: 'txt', text: 'x' }), "kind 'txt'"],
])(
  'a script function that returns %s gets a 500 naming the mistake, not a reset or a hang',
  async (_, script, said) => {
    fake = await startFakeProvider({ reply: script as never })
    const res = await post(fake)
    expect(res.status).toBe(500)
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('invalid_reply_script')
    expect(body.error.message).toContain(said)
    expect(fake.inFlight).toBe(0)
  },
)

it('a script function that throws gets a 500 naming the exception, and the record keeps it', async () => {
  const thrown = new Error('the script broke')
  fake = await startFakeProvider({
    reply: () => {
      throw thrown
    },
  })
  const res = await post(fake)
  // Before: the connection was destroyed (fetch failed), and nothing said why.
  expect(res.status).toBe(500)
  const body = (await res.json()) as { error: { code: string; message: string } }
  expect(body.error.code).toBe('reply_failed')
  expect(body.error.message).toContain('the script broke')
  expect(fake.requests[0]).toMatchObject({ outcome: 'error', failure: thrown })
  expect(fake.inFlight).toBe(0)
})

it.each([
  ['an object with no prototype', () => Object.create(null)],
  [
    'a revoked Proxy',
    () => {
      const { proxy, revoke } = Proxy.revocable(new Error('x'), {})
      revoke()
      return proxy
    },
  ],
])('a script that throws %s gets the same 500 reply_failed', async (_, make) => {
  fake = await startFakeProvider({
    reply: () => {
      throw make()
    },
  })
  // Before: String() of it threw after the 500's headers: the connection was reset.
  const res = await post(fake)
  expect(res.status).toBe(500)
  const body = (await res.json()) as { error: { code: string; message: string } }
  expect(body.error).toMatchObject({
    code: 'reply_failed',
    message: 'the fake provider failed while answering: an object',
  })
  expect(fake.inFlight).toBe(0)
})

it.each([
  [{ inputTokens: -5 }, RangeError, 'inputTokens'],
  [{ outputTokens: Number.NaN }, TypeError, 'outputTokens'],
  [{ cachedInputTokens: '10' }, TypeError, 'cachedInputTokens'],
  [{ cacheCreationInputTokens: 2.5 }, RangeError, 'cacheCreationInputTokens'],
  [{ outputTokens: Number.POSITIVE_INFINITY }, TypeError, 'outputTokens'],
  [
    { inputTokens: 10, cachedInputTokens: 8, cacheCreationInputTokens: 5 },
    RangeError,
    'inputTokens',
  ],
])(
  'reply.text(…, { usage: %j }) is refused where it is written, naming the count',
  (usage, type, field) => {
    // They went on the wire as given (`"cache_read_input_tokens":-5`), or, the
    // cache counts above the input, failed later as a 500 at request time.
    const build = () => reply.text('x', { usage: usage as never })
    expect(build).toThrow(type)
    expect(build).toThrow(field)
  },
)

it('enqueue and setReply refuse a hand-built text reply with usage counts no provider reports', async () => {
  fake = await startFakeProvider()
  const f = fake
  const bad = { kind: 'text', text: 'x', usage: { cachedInputTokens: -5 } } as const
  expect(() => f.enqueue(bad)).toThrow(/cachedInputTokens/)
  expect(() => f.setReply(bad)).toThrow(RangeError)
  expect(() =>
    f.enqueue({ kind: 'text', text: 'x', usage: { inputTokens: 4, cachedInputTokens: 5 } }),
  ).toThrow(/cannot exceed/)
  expect(f.queuedReplies).toBe(0)
  // Whole numbers ≥ 0, the cache counts within the input: as before.
  f.enqueue(
    reply.text('ok', { usage: { inputTokens: 10, cachedInputTokens: 10, outputTokens: 0 } }),
  )
  expect(f.queuedReplies).toBe(1)
  // null, as a script built from JSON writes "none", is no usage (and no count).
  f.enqueue(reply.text('ok', { usage: null as never }))
  f.enqueue(reply.text('ok', { usage: { inputTokens: null, cachedInputTokens: null } as never }))
  expect(f.queuedReplies).toBe(3)
})
