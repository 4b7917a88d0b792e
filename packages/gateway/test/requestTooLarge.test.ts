import { reply } from '@hourglass/testkit'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

const within = { 'x-deadline-remaining-ms': '5000' }

/**
 * OpenAI's answer to one request bigger than the organisation's whole TPM
 * limit (aider#1880, shell_gpt#653): a 429 with the rate limit's code, and a
 * message that names the organisation and says no wait helps.
 */
const TOO_LARGE = {
  error: {
    message:
      'Request too large for gpt-4o in organization org-2itOgSdqw0DhUYp0QyLhttLL on tokens per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.',
    type: 'tokens',
    param: null,
    code: 'rate_limit_exceeded',
  },
}

/** The same answer as OpenAI writes it today: figures with thousands separators. */
const TOO_LARGE_SEPARATED = {
  error: {
    ...TOO_LARGE.error,
    message: TOO_LARGE.error.message.replace(
      'Limit 30000, Requested 36278',
      'Limit 30,000, Requested 36,278',
    ),
  },
}

describe('a request bigger than a provider’s whole TPM limit', () => {
  let a: Awaited<ReturnType<typeof fakeProvider>>
  let b: Awaited<ReturnType<typeof fakeProvider>>
  let harness: Harness
  // One gateway for both tests: `only` has provider a alone, `m` falls back to b.
  beforeAll(async () => {
    a = await fakeProvider('openai', ['sk-a-0000000001'])
    b = await fakeProvider('deepseek', ['sk-b-0000000002'])
    // Over a's limit only when big: a small request on the same key is served.
    a.fake.setReply((r) =>
      JSON.stringify(r.body).length > 1_000
        ? reply.error(
            429,
            JSON.stringify(r.body).includes('separated') ? TOO_LARGE_SEPARATED : TOO_LARGE,
          )
        : reply.text('from a'),
    )
    b.fake.setReply(reply.text('from b'))
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: {
        only: fallback(['a', 'gpt-4o']),
        m: fallback(['a', 'gpt-4o'], ['b', 'deepseek-chat']),
      },
    })
  })
  afterAll(async () => {
    await harness?.close()
    await Promise.all([a?.fake.close(), b?.fake.close()])
  })
  // Requests each fake received since the test began.
  let seenA = 0
  let seenB = 0
  beforeEach(() => {
    seenA = a.fake.requests.length
    seenB = b.fake.requests.length
  })
  const sentA = () => a.fake.requests.length - seenA
  const sentB = () => b.fake.requests.length - seenB

  const BIG = 'word '.repeat(1_000)

  async function post(model: string, content: string): Promise<Response> {
    return fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': `big-${model}`, ...within },
      body: JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: 16 }),
    })
  }

  it('from the only provider: 413 request_too_large with both figures, x-should-retry false, and nothing cools', async () => {
    const res = await post('only', BIG)
    expect(res.status).toBe(413)
    expect(res.headers.get('x-should-retry')).toBe('false')
    expect(res.headers.get('retry-after')).toBeNull()
    const body = (await res.json()) as { error: Record<string, unknown> }
    expect(body).toEqual({
      error: {
        message:
          "the request is too large for every provider's limits; reduce the input or max_tokens (a/gpt-4o: the request alone (36278 tokens) exceeds the provider's TPM limit (30000 tokens))",
        type: 'invalid_request_error',
        param: null,
        code: 'request_too_large',
      },
    })
    // The provider's own text names the operator's organisation: not passed on.
    expect(JSON.stringify(body)).not.toContain('org-')
    expect(sentA()).toBe(1)
    // Logged (and counted) under the code the client was told.
    const line = harness.logs.find((l) => l.event === 'request' && l['requestId'] === 'big-only')
    expect(line).toMatchObject({ status: 413, error: 'request_too_large' })

    // No cooldown: the next (small) request to the same provider is sent.
    const next = await post('only', 'x')
    expect(next.status).toBe(200)
    expect(sentA()).toBe(2)
  })

  it('figures written with thousands separators ("Limit 30,000, Requested 36,278") are read: both figures, and max_tokens named', async () => {
    const res = await post('only', `separated ${BIG}`)
    expect(res.status).toBe(413)
    const body = (await res.json()) as { error: Record<string, unknown> }
    expect(body.error['message']).toBe(
      "the request is too large for every provider's limits; reduce the input or max_tokens (a/gpt-4o: the request alone (36278 tokens) exceeds the provider's TPM limit (30000 tokens))",
    )
  })

  it('names the cap field the client sent: max_completion_tokens, streamed or not', async () => {
    for (const stream of [false, true]) {
      const res = await fetch(`${harness.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...within },
        body: JSON.stringify({
          model: 'only',
          messages: [{ role: 'user', content: BIG }],
          max_completion_tokens: 16,
          stream,
        }),
      })
      expect(res.status).toBe(413)
      const body = (await res.json()) as { error: Record<string, unknown> }
      expect(body.error['message']).toBe(
        "the request is too large for every provider's limits; reduce the input or max_completion_tokens (a/gpt-4o: the request alone (36278 tokens) exceeds the provider's TPM limit (30000 tokens))",
      )
    }
  })

  it('with a second provider: falls back to it at once, the client gets its answer', async () => {
    const c = await harness.client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: BIG }], max_tokens: 16 },
      { headers: within },
    )
    expect(c.choices[0]?.message.content).toBe('from b')
    expect(sentA()).toBe(1)
    expect(sentB()).toBe(1)
    const attempts = harness.logs.filter((l) => l.event === 'attempt' && l['model'] === 'gpt-4o')
    expect(attempts.at(-1)).toMatchObject({
      provider: 'a',
      errorKind: 'request_too_large',
      decision: 'fallback',
    })
  })
})

/**
 * Anthropic's 413 for a body over the Messages API's 32 MB (Cloudflare's,
 * before the API reads it; docs.claude.com/en/api/errors), and a proxy's
 * bare 413: byte limits, which no figures in tokens describe and which a
 * smaller `max_tokens` does not get under.
 */
const BYTES_TOO_LARGE = {
  type: 'error',
  error: {
    type: 'request_too_large',
    message: 'Request exceeds the maximum allowed number of bytes.',
  },
}

describe('a request over a provider’s body-size limit (no token figures)', () => {
  let a: Awaited<ReturnType<typeof fakeProvider>>
  let b: Awaited<ReturnType<typeof fakeProvider>>
  let harness: Harness
  beforeAll(async () => {
    a = await fakeProvider('anthropic', ['sk-ant-0000000001'])
    b = await fakeProvider('deepseek', ['sk-b-0000000002'])
    a.fake.setReply(reply.error(413, BYTES_TOO_LARGE))
    // A proxy's page, with the operator's key echoed back: never passed on.
    b.fake.setReply(
      reply.error(
        413,
        `413 Request Entity Too Large\n\nkey sk-b-0000000002 body over 1m\n${'x'.repeat(2_000)}`,
      ),
    )
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: {
        claude: fallback(['a', 'claude-sonnet-4-5']),
        both: fallback(['a', 'claude-sonnet-4-5'], ['b', 'deepseek-chat']),
      },
    })
  })
  afterAll(async () => {
    await harness?.close()
    await Promise.all([a?.fake.close(), b?.fake.close()])
  })

  async function post(model: string): Promise<{ error: Record<string, unknown> }> {
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...within },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 }),
    })
    expect(res.status).toBe(413)
    expect(res.headers.get('x-should-retry')).toBe('false')
    return (await res.json()) as { error: Record<string, unknown> }
  }

  it('says what the provider said, not that max_tokens would help', async () => {
    const { error } = await post('claude')
    expect(error['code']).toBe('request_too_large')
    expect(error['message']).toBe(
      "the request is too large for every provider's limits; reduce the input (a/claude-sonnet-4-5: the provider refused it as too large: Request exceeds the maximum allowed number of bytes.)",
    )
  })

  it("a proxy's bare 413: its text bounded, on one line, with no key in it", async () => {
    const { error } = await post('both')
    const message = String(error['message'])
    expect(message).not.toContain('max_tokens')
    expect(message).toContain(
      'b/deepseek-chat: the provider refused it as too large: 413 Request Entity Too Large key [redacted] body over 1m x',
    )
    expect(message).not.toContain('sk-b-0000000002')
    expect(message).not.toContain('\n')
    expect(message.length).toBeLessThan(600)
  })

  it("a proxy's HTML 413 page: a plain sentence with the status, no markup and no server version", async () => {
    b.fake.setReply(
      reply.error(
        413,
        '<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n',
        { 'content-type': 'text/html' },
      ),
    )
    const { error } = await post('both')
    const message = String(error['message'])
    expect(message).toContain(
      "b/deepseek-chat: the provider refused it as too large: an HTML page with status 413, not the provider's own error (most likely a proxy's limit on the body's bytes)",
    )
    expect(message).not.toMatch(/[<>]/)
    expect(message).not.toContain('nginx')
  })

  it('OpenAI’s words without figures: the organisation id is not passed on', async () => {
    b.fake.setReply(
      reply.error(429, {
        error: {
          message:
            'Request too large for gpt-4o in organization org-2itOgSdqw0DhUYp0QyLhttLL. Reduce the request.',
          type: 'tokens',
          param: null,
          code: 'rate_limit_exceeded',
        },
      }),
    )
    const { error } = await post('both')
    expect(error['message']).toContain(
      'b/deepseek-chat: the provider refused it as too large: Request too large for gpt-4o in organization org-[redacted]. Reduce the request.',
    )
    expect(error['message']).not.toContain('2itOgSdqw0')
  })

  it('a page with escapes, a credentialed URL and a cut emoji: printable, no password, no lone surrogate', async () => {
    b.fake.setReply(
      reply.error(
        413,
        `\u001b[2J\u001b[31mToo large\u0007\u0000 \u202Eevil\u0085 https://admin:hunter2@10.0.0.5:8443/v1 ${'x'.repeat(239)}😀😀 tail`,
      ),
    )
    const { error } = await post('both')
    const message = String(error['message'])
    expect(message).not.toMatch(/[\p{Cc}\u202e]/u)
    expect(message).not.toContain('hunter2')
    expect(message).toContain('https://[redacted]@10.0.0.5:8443/v1')
    expect(message).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/)
  })
})
