import { anthropicErrors, openAIErrors } from '@hourglass/testkit'
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
        // A proxy's settings in front of the provider: a dialect's name, the
        // provider's own, a boolean. No secrets.
        'Helicone-Property-Upstream': 'anthropic',
        'Helicone-Property-Route': 'claude',
        'Helicone-Cache-Enabled': 'true',
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

  it("a proxy's settings (a dialect's or the provider's name, true) stay in the client's error and the log lines; a secret is still scrubbed", async () => {
    fake.enqueue(
      anthropicErrors.invalidRequest(
        'anthropic via claude: cache true refused for proxy-secret-42',
      ),
    )
    const res = await post(
      { 'content-type': 'application/json' },
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    )
    expect(res.status).toBe(400)
    const { error } = (await res.json()) as { error: { message: string } }
    // Was `[redacted]: [redacted] via [redacted]: cache [redacted] refused for [redacted]`.
    expect(error.message).toBe('claude: anthropic via claude: cache true refused for [redacted]')
    const id = res.headers.get('x-request-id')
    const lines = harness.logs.filter((l) => l.requestId === id)
    expect(lines.find((l) => l.event === 'attempt')?.['provider']).toBe('claude')
    expect(lines.find((l) => l.event === 'request')?.['provider']).toBe('claude')
    expect(JSON.stringify(lines)).not.toContain('proxy-secret-42')
    // Sent as configured.
    expect(fake.requests.at(-1)?.headers['helicone-property-upstream']).toBe('anthropic')
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

describe('a key that is a name the gateway shows anyway is not scrubbed', () => {
  it("Ollama's documented key, `ollama`, for a provider named ollama: its name stays in the log lines and the client's error", async () => {
    const local = await fakeProvider('openai', ['ollama'])
    const harness = await startHarness({
      providers: { ollama: local.entry },
      models: { llama3: fallback(['ollama', 'llama3']) },
      policy: { maxAttempts: 1 },
    })
    try {
      local.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 1 }))
      const res = await fetch(`${harness.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'llama3', messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(res.status).toBe(429)
      const { error } = (await res.json()) as { error: { message: string } }
      // Was `no provider could answer ([redacted]/llama3: rate limited)`.
      expect(error.message).toBe('no provider could answer (ollama/llama3: rate limited)')
      expect(harness.logs.find((l) => l.event === 'attempt')?.['provider']).toBe('ollama')
      expect(harness.logs.find((l) => l.event === 'request')?.['provider']).toBe('ollama')
      expect(local.fake.requests[0]?.apiKey).toBe('ollama')
    } finally {
      await harness.close()
      await local.fake.close()
    }
  })
})

describe('an upstream model name is no exemption from the scrub', () => {
  it("a key that is also a target's upstream model (an env mix-up, model: { env: AZURE_KEY }) never reaches the client's error or the log", async () => {
    const key = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
    const azure = await fakeProvider('openai', [])
    const harness = await startHarness(
      {
        providers: { azure: { ...azure.entry, apiKeys: [{ env: 'AZURE_KEY' }] } },
        models: { chat: { fallback: [{ provider: 'azure', model: { env: 'AZURE_KEY' } }] } },
        policy: { maxAttempts: 1 },
      },
      { env: { AZURE_KEY: key } },
    )
    try {
      azure.fake.enqueue(openAIErrors.modelNotFound(key))
      const res = await fetch(`${harness.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(res.status).toBe(502)
      const body = await res.text()
      expect(body).not.toContain(key)
      const { error } = JSON.parse(body) as { error: { message: string } }
      // Was `no provider could answer (azure/a1b2c3d4…: not found)`: the key, as the model's name.
      expect(error.message).toBe('no provider could answer (azure/[redacted]: not found)')
      expect(harness.logs.length).toBeGreaterThan(0)
      expect(JSON.stringify(harness.logs)).not.toContain(key)
      // Sent as configured: the provider got the key it was given.
      expect(azure.fake.requests[0]?.apiKey).toBe(key)
    } finally {
      await harness.close()
      await azure.fake.close()
    }
  })
})
