import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'

/**
 * A reply's delays, counts, status and headers are checked where the test
 * writes them. A delay that was no number (`tokenDelayMs: '50'`, read from
 * an environment variable) made the fake's wait reject, which it read as
 * the client leaving: the answer stopped after its headers, the response
 * was never ended, and the request stayed `pending` — the client under test
 * hung until its own timeout, a stall the test never scripted.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const post = (f: FakeProvider, stream: boolean) =>
  fetch(`${f.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', stream, messages: [{ role: 'user', content: 'hi' }] }),
    // A guard against the old hang, not a timing: any answer comes at once.
    signal: AbortSignal.timeout(5000),
  })

it.each([
  [{ tokenDelayMs: '50' }, 'reply.text(): tokenDelayMs must be a number of ms ≥ 0, got "50"'],
  [{ firstTokenDelayMs: -1 }, /firstTokenDelayMs must be a number of ms ≥ 0, got -1/],
  [{ latencyMs: Number.NaN }, /latencyMs must be a number of ms ≥ 0, got NaN/],
  [{ keepAliveEveryMs: '10' }, /keepAliveEveryMs/],
  [{ splitBytes: 10, writeGapMs: '5' }, /writeGapMs/],
  [{ splitBytes: 2.5 }, /splitBytes must be a whole number ≥ 0, got 2.5/],
  [{ cutAfterTokens: -1 }, /cutAfterTokens must be a whole number ≥ 0, got -1/],
  [{ streamError: { afterTokens: '1', body: {} } }, /streamError.afterTokens/],
  [{ streamError: { afterTokens: 1, body: {}, status: 1000 } }, /streamError.status/],
  [{ headers: { 'x-a': 'one\ntwo' } }, /headers\["x-a"\] cannot be sent/],
  [{ headers: { 'retry-after': 2 } }, /headers\["retry-after"\] must be a string, got 2/],
])('reply.text(%j) is refused where it is written', (options, message) => {
  expect(() => reply.text('a b c', options as never)).toThrow(message)
})

it('reply.error and reply.hang refuse what they cannot send', () => {
  expect(() => reply.error(1000, {})).toThrow(/status must be an HTTP status/)
  expect(() => reply.error('429' as never, {})).toThrow(/status must be an HTTP status/)
  expect(() => reply.error(429, {}, { 'retry-after': '1\r\nx: y' })).toThrow(/cannot be sent/)
  expect(() => reply.error(429, {}, {}, { latencyMs: '5' as never })).toThrow(/latencyMs/)
  expect(() => reply.hang({ afterHeaders: true, keepAliveEveryMs: '5' as never })).toThrow(
    /keepAliveEveryMs/,
  )
})

it('enqueue and setReply refuse a reply written by hand with such a field', async () => {
  fake = await startFakeProvider()
  const f = fake
  expect(() => f.enqueue({ kind: 'text', text: 'x', tokenDelayMs: '50' } as never)).toThrow(
    'FakeProvider.enqueue: tokenDelayMs must be a number of ms ≥ 0, got "50"',
  )
  expect(() => f.setReply({ kind: 'error', status: 0, body: {} })).toThrow(/status/)
  expect(() => f.rateLimit({ forMs: 1000, reply: { kind: 'hang', keepAliveEveryMs: -1 } })).toThrow(
    /keepAliveEveryMs/,
  )
  expect(f.queuedReplies).toBe(0)
})

it.each([true, false])(
  'a script function giving such a reply gets the 500 reply_failed, not a hang (stream: %s)',
  async (stream) => {
    fake = await startFakeProvider({
      reply: () => ({ kind: 'text', text: 'a b c', tokenDelayMs: '50' }) as never,
    })
    const res = await post(fake, stream)
    expect(res.status).toBe(500)
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('reply_failed')
    expect(body.error.message).toMatch(/tokenDelayMs must be a number of ms/)
    expect(fake.requests[0]).toMatchObject({ outcome: 'error' })
    expect(fake.requests[0]?.failure).toBeInstanceOf(TypeError)
    expect(fake.inFlight).toBe(0)
  },
)

it('the valid edges still go out: zero delays and counts, a 599, string headers', async () => {
  fake = await startFakeProvider()
  fake.enqueue(
    reply.text('a b c', { tokenDelayMs: 0, splitBytes: 0, cutAfterTokens: 0 }),
    reply.error(599, { error: { message: 'odd' } }, { 'retry-after': '0' }, { latencyMs: 0 }),
  )
  const cut = await post(fake, true)
  expect(cut.status).toBe(200)
  await expect(cut.text()).rejects.toThrow()
  const odd = await post(fake, false)
  expect(odd.status).toBe(599)
  expect(odd.headers.get('retry-after')).toBe('0')
})
