import { inspect } from 'node:util'
import { type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { createAdapter } from '../../src/adapters/createAdapter.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import type { Dialect } from '../../src/dialects/Dialect.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isProviderError, type ProviderError } from '../../src/errors/ProviderError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('Hi')], maxTokens: 32 }
const retry = { maxAttempts: 3, delay: FAST_RETRIES }

// Volcengine Ark (Doubao) keys are UUIDs: no `sk-`, no `AIza`, nothing key-shaped.
const KEY_A = '3f9c2d1e-8b7a-4c65-9e21-0d4f7a6b5c38'
const KEY_B = 'a71e0c94-2b3d-4f58-86c7-e19d2f4a0b6d'
const KEYS = [KEY_A, KEY_B]

/** Every way a caller or a log line sees an error, with its causes. */
function everyView(error: unknown, records: readonly AttemptRecord[] = []): string[] {
  const views = [
    String(error),
    (error as Error).message,
    inspect(error, { depth: 10 }),
    JSON.stringify(records),
  ]
  for (let cause = (error as Error).cause; cause !== undefined; ) {
    views.push(String(cause), inspect(cause, { depth: 10 }))
    cause = (cause as Error).cause
  }
  for (const failure of (error as { causes?: { cause: unknown; reason: string }[] }).causes ?? []) {
    views.push(failure.reason, String(failure.cause), inspect(failure.cause, { depth: 10 }))
  }
  return views
}

function expectNoKey(views: readonly string[], keys: readonly string[] = KEYS): void {
  for (const view of views) {
    for (const key of keys) {
      expect(view).not.toContain(key)
      // Nor a piece of it left by a cut: its first 13 characters (`3f9c2d1e-8b7a`).
      expect(view).not.toContain(key.slice(0, 13))
    }
  }
}

/** Ark's 401, echoing the key the request carried — and the other one on file. */
const echoingUnauthorized = (request: RecordedRequest) =>
  reply.error(401, {
    error: {
      code: 'AuthenticationError',
      message: `The API key ${request.apiKey} in the request is invalid (keys on file: ${KEY_A}, ${KEY_B}). Request id: 20250101000000FAKE`,
      param: request.apiKey,
      type: 'Unauthorized',
    },
  })

function doubao(baseURL: string, extra: { apiKeys?: string[] } = {}): ModelAdapter {
  return fakes.adapter(
    openAICompatible({ dialect: 'doubao', baseURL, apiKeys: KEYS, model: 'doubao-pro', ...extra }),
  )
}

describe('keys a provider echoes are redacted by value, whatever their shape', () => {
  it('doubao: a 401 body echoing UUID keys leaves them in no message, field or cause', async () => {
    const fake = await fakes.start({ dialect: 'doubao', reply: echoingUnauthorized })
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [doubao(fake.baseURL)],
      request,
      retry,
      onAttempt: (r) => records.push(r),
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    // Both keys were sent (the second after the first was rejected), and echoed.
    expect(fake.requests.map((r) => r.apiKey)).toEqual([KEY_A, KEY_B])
    expect(records.length).toBeGreaterThan(0)
    const views = everyView(error, records)
    expectNoKey(views)
    // Still a useful message: the provider's words, with the keys taken out.
    expect(inspect(error, { depth: 10 })).toContain(
      'The API key [redacted] in the request is invalid (keys on file: [redacted], [redacted])',
    )
  })

  it('one attempt, one key used: the other key, echoed, is redacted too', async () => {
    const fake = await fakes.start({ dialect: 'doubao', reply: echoingUnauthorized })
    const adapter = doubao(fake.baseURL)
    const result = await adapter.send(request, {
      apiKey: KEY_A,
      idempotencyKey: 'op-1',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.error).toMatchObject({ kind: 'auth', status: 401 })
    expectNoKey(everyView(result.error))
  })

  it('openai: a key in the provider code, and cut in two by the 500-character limit', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r) =>
        reply.error(401, {
          // The key sits across character 500: a cut after redaction would leave its first half.
          error: { code: `invalid_key:${r.apiKey}`, message: `${'x'.repeat(480)} key ${r.apiKey}` },
        }),
    })
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKeys: KEYS, model: 'gpt-4o' }),
    )
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [adapter],
      request,
      retry,
      onAttempt: (r) => records.push(r),
    }).catch((e: unknown) => e)
    expectNoKey(everyView(error, records))
    const cause = (error as { lastCause?: unknown }).lastCause as ProviderError
    expect(isProviderError(cause)).toBe(true)
    expect(cause.providerCode).toBe('invalid_key:[redacted]')
  })

  it('a redirect whose Location carries the key (not as `key=`) has it redacted from the message', async () => {
    const fake = await fakes.start({
      dialect: 'doubao',
      reply: (r) =>
        reply.error(302, '', { location: `https://ark.example.com/api/v3?token=${r.apiKey}` }),
    })
    const result = await doubao(fake.baseURL).send(request, {
      apiKey: KEY_B,
      idempotencyKey: 'op-2',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.error.kind).toBe('not_found')
    expect(result.error.message).toContain('token=[redacted]')
    expectNoKey(everyView(result.error))
  })

  it('doubao: an error frame echoing the key in a 200 stream', async () => {
    const fake = await fakes.start({
      dialect: 'doubao',
      reply: reply.text('never seen', {
        streamError: {
          afterTokens: 0,
          body: {
            error: {
              code: 'AuthenticationError',
              message: `The API key ${KEY_A} is invalid`,
              type: 'Unauthorized',
            },
          },
        },
      }),
    })
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [doubao(fake.baseURL, { apiKeys: [KEY_A] })],
      request: { ...request, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
    }).result.catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect(records[0]).toMatchObject({ errorKind: 'auth' })
    expectNoKey(everyView(error, records))
  })

  it('a custom dialect that builds its own message: the adapter still redacts it', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: echoingUnauthorized })
    const careless: Dialect = {
      ...dialects.openai,
      normalizeError: (input) =>
        input.status === 401
          ? { kind: 'auth', retryable: false, status: 401, message: input.body }
          : dialects.openai.normalizeError(input),
    }
    const adapter = fakes.adapter(
      createAdapter(careless, { baseURL: fake.baseURL, apiKeys: KEYS, model: 'm' }),
    )
    const result = await adapter.send(request, {
      apiKey: KEY_B,
      idempotencyKey: 'op-3',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.error.message).toContain('[redacted]')
    expectNoKey(everyView(result.error))
  })

  it('a credential in `headers` (no apiKey) is redacted by value too', async () => {
    const TOKEN = 'gw_7QxT2pLm9ZrB4vKc8NfJ'
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r) =>
        reply.error(403, { error: { message: `token ${r.headers['x-gateway-token']} revoked` } }),
    })
    const adapter = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        model: 'm',
        headers: { 'X-Gateway-Token': TOKEN },
      }),
    )
    const result = await adapter.send(request, {
      apiKey: undefined,
      idempotencyKey: 'op-4',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.error.message).toContain('token [redacted] revoked')
    expectNoKey(everyView(result.error), [TOKEN])
  })

  it("a header named for something else is not a credential: Portkey's x-portkey-provider keeps its provider's name in messages", async () => {
    const PORTKEY_KEY = 'pk_Zc4mQ8vT1xLr7NbY2sWe'
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r) =>
        reply.error(400, {
          error: {
            message: `provider ${r.headers['x-portkey-provider']} refused the request (key ${r.headers['x-portkey-api-key']})`,
          },
        }),
    })
    const adapter = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        model: 'm',
        headers: { 'x-portkey-provider': 'anthropic', 'x-portkey-api-key': PORTKEY_KEY },
      }),
    )
    const result = await adapter.send(request, {
      apiKey: undefined,
      idempotencyKey: 'op-6',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    // "key" inside "portkey" made the provider's name a secret: "provider [redacted] refused".
    expect(result.error.normalized.message).toBe(
      'provider anthropic refused the request (key [redacted])',
    )
    expectNoKey(everyView(result.error), [PORTKEY_KEY])
  })

  it('a credential header named by a word ending in key, containing auth, or with a number after it is one: its value is redacted', async () => {
    // Names users send: an app's or a user's key, OAuth, a second key…
    const headers = {
      'x-appkey': 'appkey-Zc4mQ8vT1xLr7NbY2sWe',
      'x-userkey': 'userkey-Hq2LpW9eXv3TbN6mKr',
      privatekey: 'private-Gt5RwJ8cYn1QzM4sLa',
      XAPIKey: 'xapikey-Bv7NcK2mQp9LtR3wEy',
      'x-oauth': 'oauth-Ud6HjF1sZx8PkW4nVb',
      'x-xauth': 'xauth-Mr3YtG7qLc2NvB9hKs',
      'api-key2': 'second-Wp4KsT8nHy1RcJ6fXq',
      'x-token2': 'token2-Le9QbV3mZr7TxN2cGu',
      Cookie2: 'session=Fk8WnP2rYt5HcM1qLz',
      'x-portkey-provider': 'anthropic',
    }
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r) =>
        reply.error(400, {
          error: {
            message: `provider ${r.headers['x-portkey-provider']} refused: ${Object.keys(headers)
              .map((name) => r.headers[name.toLowerCase()])
              .join(' ')}`,
          },
        }),
    })
    const adapter = fakes.adapter(openAICompatible({ baseURL: fake.baseURL, model: 'm', headers }))
    const result = await adapter.send(request, {
      apiKey: undefined,
      idempotencyKey: 'op-7',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    // Before: every one of them but x-portkey-provider's was in the message.
    expect(result.error.normalized.message).toMatch(/^provider anthropic refused: /)
    const { 'x-portkey-provider': _provider, ...secrets } = headers
    expectNoKey(everyView(result.error), Object.values(secrets))
  })

  it('keys too short to tell from words are not searched for: messages stay readable', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.error(400, { error: { message: 'ask the task runner', code: 'bad' } }),
    })
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
    )
    const result = await adapter.send(request, {
      apiKey: 'sk',
      idempotencyKey: 'op-5',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.error.normalized.message).toBe('ask the task runner')
  })
})
