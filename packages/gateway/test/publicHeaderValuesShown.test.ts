import { anthropicErrors } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A provider's configured headers are scrubbed from errors and logs like
 * keys, but for those whose values the providers document as public
 * settings: `anthropic-beta`, `OpenAI-Beta`, OpenRouter's `HTTP-Referer`
 * and `X-Title`. Anthropic refuses a beta name it does not know in a 400
 * that quotes it; scrubbed, the operator saw every request refused over
 * "`[redacted]`", the one value to fix hidden.
 */
describe('public header values (anthropic-beta, X-Title…) are shown; secret ones still scrubbed', () => {
  let harness: Harness
  let fake: Awaited<ReturnType<typeof fakeProvider>>['fake']
  beforeAll(async () => {
    const p = await fakeProvider('anthropic', ['sk-ant-test-key-1'], {
      headers: {
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
    const attempt = harness.logs.find((l) => l.event === 'attempt')
    expect(attempt?.['providerMessage']).toBe(expected)
    // The headers went out as configured.
    expect(fake.requests[0]?.headers['anthropic-beta']).toBe('context-1m-2099-01-01')
  })
})
