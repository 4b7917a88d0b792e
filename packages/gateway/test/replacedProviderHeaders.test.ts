import { expect, it } from 'vitest'
import { createGateway, GatewayConfigError, parseGatewayConfig } from '../src/index.js'
import { fakeProvider, fallback, startHarness } from './support/harness.js'

/**
 * `providers.<name>.headers` are extra request headers. One the adapter
 * writes itself on every request — the key's header beside `apiKeys`,
 * `content-type`, `accept`, `accept-encoding`, `idempotency-key`,
 * Anthropic's `anthropic-version` — was accepted and never sent: an
 * `Authorization: Bearer <proxy token>` beside `apiKeys` went out as
 * `Bearer <key>`, the proxy answered 401 and the keys were retired, with
 * nothing at start to say why. Refused by the config's validation instead
 * (`parseGatewayConfig`, `loadGatewayConfig`, `createGateway`): every such
 * header of every provider, with the config's other problems, in one run.
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

const provider = (
  dialect: string,
  headers: Record<string, string | { env: string }>,
  apiKeys = ['k'],
) => ({
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
  // Exactly these: `anthropic-beta` beside `anthropic-version` is sent, not refused.
  expect(problems.map((p) => p.slice(0, p.indexOf(':')))).toEqual([
    'providers.o.headers.Authorization',
    'providers.a.headers.x-api-key',
    'providers.v.headers.anthropic-version',
    'providers.g.headers.X-Goog-Api-Key',
    'providers.q.headers.content-type',
    'providers.d.headers.Accept-Encoding',
  ])
  expect(problems).toEqual(
    expect.arrayContaining([
      expect.stringMatching(
        /^providers\.o\.headers\.Authorization: cannot be set beside apiKeys: .*Authorization: Bearer <key>.*leave apiKeys empty/,
      ),
      expect.stringMatching(/^providers\.a\.headers\.x-api-key: cannot be set beside apiKeys/),
      expect.stringMatching(
        /^providers\.v\.headers\.anthropic-version: cannot be set to another value: the anthropic dialect sends its own \(anthropic-version: 2023-06-01\)/,
      ),
      expect.stringMatching(/^providers\.g\.headers\.X-Goog-Api-Key: cannot be set beside apiKeys/),
      expect.stringMatching(
        /^providers\.q\.headers\.content-type: cannot be set to another value: the adapter sends its own on every request \(content-type: application\/json\)/,
      ),
      expect.stringMatching(/^providers\.d\.headers\.Accept-Encoding: cannot be set/),
    ]),
  )
})

it('lists every refused header of a provider with its other problems and the rest of the config’s, from parseGatewayConfig too', () => {
  const config = {
    providers: {
      g: {
        ...provider('gemini', {
          // Not what is sent (`application/json`, no parameters): refused.
          'content-type': 'application/json; charset=utf-8',
          accept: 'application/json',
          'x-goog-api-key': { env: 'OTHER_KEY' },
          'x-goog-user-project': 'p-1',
        }),
        limits: { rpm: -1 },
      },
      o: provider('openai', { Authorization: 'Bearer proxy-token', 'idempotency-key': 'k' }),
      // Not routed to by any model, and still checked, as its other fields are.
      spare: provider('anthropic', { 'anthropic-version': '2024-01-01' }),
    },
    models: { m: fallback(['g', 'x'], ['o', 'x']) },
    policy: { maxAttempts: 0 },
  }
  const expected = [
    'providers.g.headers.x-goog-api-key: environment variable OTHER_KEY is not set',
    'providers.g.limits.rpm: expected 0 or more',
    'providers.g.headers.content-type: cannot be set to another value: the adapter sends its own on every request (content-type: application/json), which replaces this value, so it would never be sent',
    'providers.g.headers.accept: cannot be set: the adapter sends its own on every request, which replaces this value, so it would never be sent',
    'providers.g.headers.x-goog-api-key: cannot be set beside apiKeys: each request carries the key from apiKeys in it (x-goog-api-key: <key>), which replaces this value, so it would never be sent; put the credential in apiKeys, or leave apiKeys empty to send this header',
    'providers.o.headers.Authorization: cannot be set beside apiKeys: each request carries the key from apiKeys in it (Authorization: Bearer <key>), which replaces this value, so it would never be sent; put the credential in apiKeys, or leave apiKeys empty to send this header',
    'providers.o.headers.idempotency-key: cannot be set: the adapter sends its own on every request, which replaces this value, so it would never be sent',
    'providers.spare.headers.anthropic-version: cannot be set to another value: the anthropic dialect sends its own (anthropic-version: 2023-06-01), which replaces this value, so it would never be sent',
    'policy.maxAttempts: Too small: expected number to be >=1',
  ]
  let parsed: unknown
  try {
    parsed = parseGatewayConfig(config, { env: {} })
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayConfigError)
    parsed = (error as GatewayConfigError).problems.map((p) => `${p.field}: ${p.message}`)
  }
  expect(parsed).toEqual(expected)
  // createGateway reads process.env: the variable is unset there too.
  expect(process.env['OTHER_KEY']).toBeUndefined()
  expect(problemsOf(config)).toEqual(expected)
})

it('reports the key header beside a lone key where the list belongs, with the list’s own problem', () => {
  // `"apiKeys": "sk-…"` is a key the operator meant to send all the same:
  // before, only the list's problem was listed, the header's on the next run.
  const config = {
    providers: { o: { ...provider('openai', { Authorization: 'Bearer t' }), apiKeys: 'sk-1' } },
    models: { m: fallback(['o', 'x']) },
  }
  expect(problemsOf(config).map((p) => p.slice(0, p.indexOf(':')))).toEqual([
    'providers.o.apiKeys',
    'providers.o.headers.Authorization',
  ])
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

it('accepts a header set to the very value the adapter or dialect sends on every request (Anthropic’s curl headers), and sends it', async () => {
  // Anthropic's documented curl example; a media type and a content coding
  // compare in any letter case, as HTTP compares them.
  const copied = {
    'anthropic-version': '2023-06-01',
    'Content-Type': 'Application/JSON',
    'accept-encoding': 'IDENTITY',
  }
  const { fake, entry } = await fakeProvider('anthropic', ['k'], { headers: copied })
  const config = { providers: { p: entry }, models: { m: fallback(['p', 'claude']) } }
  expect(problemsOf(config)).toEqual([])
  const harness = await startHarness(config)
  try {
    await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    const sent = fake.requests[0]!.headers
    expect([sent['anthropic-version'], sent['content-type'], sent['accept-encoding']]).toEqual([
      '2023-06-01',
      'application/json',
      'identity',
    ])
  } finally {
    await harness.close()
    await fake.close()
  }
})

it('still refuses a value that differs from what is sent, accept and idempotency-key whatever their value, and the key header beside apiKeys even set to the key', () => {
  const config = {
    providers: {
      a: provider('anthropic', {
        'anthropic-version': '2023-06-01 beta',
        'content-type': { env: 'CT' },
        'Accept-Encoding': 'identity, gzip',
        // Unstreamed calls send this one, streamed ones text/event-stream.
        Accept: 'application/json',
        'idempotency-key': 'k-1',
        'x-api-key': 'k',
      }),
      // Another dialect sends no anthropic-version: this one is sent as written.
      o: provider('openai', { 'anthropic-version': '2024-01-01', 'content-type': { env: 'SAME' } }),
    },
    models: { m: fallback(['a', 'x'], ['o', 'x']) },
  }
  let problems: string[] = []
  try {
    parseGatewayConfig(config, { env: { CT: 'text/plain', SAME: 'application/json' } })
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayConfigError)
    problems = (error as GatewayConfigError).problems.map((p) => `${p.field}: ${p.message}`)
  }
  expect(problems).toEqual([
    'providers.a.headers.anthropic-version: cannot be set to another value: the anthropic dialect sends its own (anthropic-version: 2023-06-01), which replaces this value, so it would never be sent',
    'providers.a.headers.content-type: cannot be set to another value: the adapter sends its own on every request (content-type: application/json), which replaces this value, so it would never be sent',
    'providers.a.headers.Accept-Encoding: cannot be set to another value: the adapter sends its own on every request (Accept-Encoding: identity), which replaces this value, so it would never be sent',
    'providers.a.headers.Accept: cannot be set: the adapter sends its own on every request, which replaces this value, so it would never be sent',
    'providers.a.headers.idempotency-key: cannot be set: the adapter sends its own on every request, which replaces this value, so it would never be sent',
    'providers.a.headers.x-api-key: cannot be set beside apiKeys: each request carries the key from apiKeys in it (x-api-key: <key>), which replaces this value, so it would never be sent; put the credential in apiKeys, or leave apiKeys empty to send this header',
  ])
})

it('refuses a deadline header in any letter case, with or without apiKeys: every call carries its own deadline, which replaces it', () => {
  const problems = problemsOf({
    providers: {
      o: provider(
        'openai',
        {
          'X-Stainless-Timeout': '600',
          'x-envoy-expected-rq-timeout-ms': '5000',
          'GRPC-Timeout': '5S',
          'x-deadline-remaining-ms': '999',
          'x-tenant': 't-7',
        },
        [],
      ),
      g: provider('gemini', { 'x-deadline-remaining-ms': { env: 'HG_TEST_UNSET_DEADLINE' } }),
    },
    models: { m: fallback(['o', 'x'], ['g', 'x']) },
  })
  const why =
    'cannot be set: a deadline header, and every call carries its own deadline: the gateway drops any deadline header from each attempt and writes what is left of the call’s in x-deadline-remaining-ms (and in grpc-timeout, in its format, where one was given), so this value would never be sent'
  expect(problems).toEqual([
    `providers.o.headers.X-Stainless-Timeout: ${why}`,
    `providers.o.headers.x-envoy-expected-rq-timeout-ms: ${why}`,
    `providers.o.headers.GRPC-Timeout: ${why}`,
    `providers.o.headers.x-deadline-remaining-ms: ${why}`,
    'providers.g.headers.x-deadline-remaining-ms: environment variable HG_TEST_UNSET_DEADLINE is not set',
    `providers.g.headers.x-deadline-remaining-ms: ${why}`,
  ])
})
