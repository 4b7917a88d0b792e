import { expect, it } from 'vitest'
import { createGateway, GatewayConfigError } from '../src/index.js'
import { fakeProvider, fallback, startHarness } from './support/harness.js'

/**
 * `providers.<name>.headers` are extra request headers. One the adapter
 * writes itself on every request — the key's header beside `apiKeys`,
 * `content-type`, `accept`, `accept-encoding`, `idempotency-key`,
 * Anthropic's `anthropic-version` — was accepted and never sent: an
 * `Authorization: Bearer <proxy token>` beside `apiKeys` went out as
 * `Bearer <key>`, the proxy answered 401 and the keys were retired, with
 * nothing at start to say why. Refused when the gateway is made instead.
 */

function problemsOf(config: unknown): string[] {
  try {
    const gateway = createGateway(config, { logger: () => {} })
    void gateway.close()
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayConfigError)
    return (error as GatewayConfigError).problems.map((p) => `${p.field}: ${p.message}`)
  }
  return []
}

const provider = (dialect: string, headers: Record<string, string>, apiKeys = ['k']) => ({
  dialect,
  baseURL: dialect === 'anthropic' ? 'http://127.0.0.1:9' : 'http://127.0.0.1:9/v1',
  apiKeys,
  headers,
})

it('refuses a provider header the adapter always replaces, naming the provider, the header and why it is never sent', () => {
  const problems = problemsOf({
    providers: {
      o: provider('openai', { Authorization: 'Bearer proxy-token' }),
      a: provider('anthropic', { 'x-api-key': 'other' }),
      v: provider('anthropic', { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'b' }),
      g: provider('gemini', { 'X-Goog-Api-Key': 'other' }),
      q: provider('qwen', { 'content-type': 'text/plain' }),
      d: provider('deepseek', { 'Accept-Encoding': 'gzip' }),
    },
    models: {
      m: fallback(['o', 'x'], ['a', 'x'], ['v', 'x'], ['g', 'x'], ['q', 'x'], ['d', 'x']),
    },
  })
  expect(problems).toHaveLength(6)
  expect(problems).toEqual(
    expect.arrayContaining([
      expect.stringMatching(
        /^providers\.o\.headers\.Authorization: cannot be set beside apiKeys: .*Authorization: Bearer <key>.*leave apiKeys empty/,
      ),
      expect.stringMatching(/^providers\.a\.headers\.x-api-key: cannot be set beside apiKeys/),
      expect.stringMatching(
        /^providers\.v\.headers\.anthropic-version: cannot be set: the anthropic dialect sends its own \(anthropic-version: 2023-06-01\)/,
      ),
      expect.stringMatching(/^providers\.g\.headers\.X-Goog-Api-Key: cannot be set beside apiKeys/),
      expect.stringMatching(
        /^providers\.q\.headers\.content-type: cannot be set: the adapter sends its own on every request/,
      ),
      expect.stringMatching(/^providers\.d\.headers\.Accept-Encoding: cannot be set/),
    ]),
  )
})

it('takes the key header as the credential when apiKeys is empty, and sends it', async () => {
  const { fake, entry } = await fakeProvider('openai', [], {
    headers: { Authorization: 'Bearer proxy-token', 'x-tenant': 't-7' },
  })
  const harness = await startHarness({
    providers: { p: entry },
    models: { m: fallback(['p', 'gpt']) },
  })
  try {
    await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(fake.requests.map((r) => [r.apiKey, r.headers['x-tenant']])).toEqual([
      ['proxy-token', 't-7'],
    ])
  } finally {
    await harness.close()
    await fake.close()
  }
})
