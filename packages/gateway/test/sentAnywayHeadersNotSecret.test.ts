import { anthropicErrors } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * Anthropic's documented curl headers, copied into a provider's `headers`
 * (the config takes them: what goes out is the same), are protocol
 * constants, not secrets. Every header value was scrubbed like a key, so
 * with them configured the gateway's own 400 told a client to send
 * `Content-Type: [redacted]`, and a provider's message naming the media
 * type or the API version reached the client and the log with holes in it.
 * Nor are the values of headers the providers document as public settings
 * (`anthropic-beta`, `OpenAI-Beta`, OpenRouter's `HTTP-Referer` and
 * `X-Title`): Anthropic refuses a beta name it does not know in a 400 that
 * quotes it, and scrubbed, the operator saw every request refused over
 * "`[redacted]`", the one value to fix hidden. A header value that is
 * neither is still scrubbed.
 */
describe('header values the gateway sends anyway, and public settings, are not scrubbed as secrets', () => {
  let harness: Harness
  let fake: Awaited<ReturnType<typeof fakeProvider>>['fake']
  beforeAll(async () => {
    const p = await fakeProvider('anthropic', ['sk-ant-test-key-1'], {
      headers: {
        'anthropic-version': '2023-06-01',
        'Content-Type': 'application/json',
        'anthropic-beta': 'context-1m-2099-01-01',
        'X-Title': 'Acme Chat',
        'x-proxy-token': 'proxy-secret-42',
      },
    })
    fake = p.fake
    harness = await startHarness({
      providers: { claude: p.entry },
      models: { m: fallback(['claude', 'claude-sonnet-4-5']) },
    })
  })
  afterAll(async () => {
    await harness.close()
    await fake.close()
  })

  const post = (headers: Record<string, string>, body: string) =>
    fetch(`${harness.url}/v1/chat/completions`, { method: 'POST', headers, body })

  it("the gateway's own message names the Content-Type to send", async () => {
    const res = await post(
      { 'content-type': 'text/plain' },
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    )
    expect(res.status).toBe(400)
    const { error } = (await res.json()) as { error: { message: string } }
    expect(error.message).toBe('body: expected a JSON object (Content-Type: application/json)')
  })

  it("a provider's message keeps the media type and the version; a configured secret is still scrubbed", async () => {
    fake.enqueue(
      anthropicErrors.invalidRequest(
        'content: expected application/json as of 2023-06-01, got proxy-secret-42',
      ),
    )
    const res = await post(
      { 'content-type': 'application/json' },
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    )
    expect(res.status).toBe(400)
    const { error } = (await res.json()) as { error: { message: string } }
    expect(error.message).toBe(
      'claude: content: expected application/json as of 2023-06-01, got [redacted]',
    )
    const attempt = harness.logs.find((l) => l['event'] === 'attempt')
    expect(attempt?.['providerMessage']).toBe(
      'content: expected application/json as of 2023-06-01, got [redacted]',
    )
  })

  it("Anthropic's 400 naming an unknown beta reaches the client and the log with the beta's name", async () => {
    fake.enqueue(
      anthropicErrors.invalidRequest(
        'Unexpected value(s) `context-1m-2099-01-01` for the `anthropic-beta` header (Acme Chat, proxy-secret-42).',
      ),
    )
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(res.status).toBe(400)
    const expected =
      'Unexpected value(s) `context-1m-2099-01-01` for the `anthropic-beta` header (Acme Chat, [redacted]).'
    const { error } = (await res.json()) as { error: { message: string } }
    expect(error.message).toBe(`claude: ${expected}`)
    const attempt = harness.logs.findLast((l) => l.event === 'attempt')
    expect(attempt?.['providerMessage']).toBe(expected)
    // The headers went out as configured.
    expect(fake.requests.at(-1)?.headers['anthropic-beta']).toBe('context-1m-2099-01-01')
  })
})
