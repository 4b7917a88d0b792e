import { gzipSync } from 'node:zlib'
import { Deadline } from '@hourglass/core'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import { geminiErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import {
  isModelUnavailable,
  type ModelUnavailableError,
} from '../../src/errors/ModelUnavailableError.js'
import type { ProviderError } from '../../src/errors/ProviderError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

const fakes = useFakes()
const request = {
  messages: [{ role: 'system' as const, content: 'Be brief.' }, user('Hi')],
  maxTokens: 32,
}

/** An OpenAI `chat.completion` body answering `text`. */
function completion(text: string): string {
  return JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    created: 0,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
  })
}

describe('provider adapters', () => {
  it('OpenAI-compatible: Bearer auth, the deadline header, the answer normalised', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('Hello there.') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-oai', model: 'gpt-4o-mini' }),
    )
    using deadline = Deadline.after(5000)
    const response = await callModel({ models: [model], request, deadline })
    expect(response).toMatchObject({
      text: 'Hello there.',
      provider: 'openai',
      model: 'gpt-4o-mini',
      finishReason: 'stop',
    })
    const sent = fake.requests[0]
    expect(sent?.headers['authorization']).toBe('Bearer sk-oai')
    expect(Number(sent?.headers['x-deadline-remaining-ms'])).toBeGreaterThan(4000)
    expect(Number(sent?.headers['x-deadline-remaining-ms'])).toBeLessThanOrEqual(5000)
  })

  it('Anthropic: x-api-key and anthropic-version, thinking with its signature, streaming and not', async () => {
    const fake = await fakes.start({
      dialect: 'anthropic',
      reply: reply.text('Sure.', { thinking: 'The user greets me.', signature: 'sig-1' }),
    })
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    // Claude thinks only when asked: reasoning_effort turns it on.
    const thinks = { ...request, extra: { reasoning_effort: 'low' } }
    const whole = await callModel({ models: [model], request: thinks })
    const stream = callModel({ models: [model], request: { ...thinks, stream: true } })
    const streamed = await stream.result
    for (const response of [whole, streamed]) {
      expect(response.text).toBe('Sure.')
      expect(response.content[0]).toEqual({
        type: 'thinking',
        thinking: 'The user greets me.',
        signature: 'sig-1',
        signedBy: 'claude-opus-4-6@anthropic',
      })
    }
    expect(fake.requests[0]?.headers['x-api-key']).toBe('sk-ant')
    expect(fake.requests[0]?.headers['anthropic-version']).toBe('2023-06-01')
    expect(fake.requests[0]?.body).toMatchObject({
      thinking: { type: 'adaptive', display: 'summarized' },
      output_config: { effort: 'low' },
    })
    expect(fake.requests.map((r) => r.stream)).toEqual([false, true])
  })

  it('send through the dispatcher of the fetch they are given (its limits and deadline header), never calling the function: wrap the dispatcher to see what they send', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('Seen.') })
    const base = createFetch()
    const seen: string[] = []
    const dispatcher = base.dispatcher.compose((dispatch) => (opts, handler) => {
      seen.push(`${opts.method} ${opts.path}`)
      return dispatch(opts, handler)
    })
    const notCalled = () => Promise.reject(new Error('an adapter called the fetch function'))
    const fetch: HourglassFetch = Object.assign(notCalled, {
      dispatcher,
      close: () => base.close(),
      wouldRefuse: base.wouldRefuse,
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini', fetch }),
    )
    using deadline = Deadline.after(5000)
    const whole = await callModel({ models: [model], request, deadline })
    const streamed = await callModel({ models: [model], request: { ...request, stream: true } })
      .result
    expect([whole.text, streamed.text]).toEqual(['Seen.', 'Seen.'])
    expect(seen).toEqual(['POST /v1/chat/completions', 'POST /v1/chat/completions'])
    // The deadline interceptor under the wrapper still sent the budget.
    expect(Number(fake.requests[0]?.headers['x-deadline-remaining-ms'])).toBeGreaterThan(4000)
    await base.close()
  })

  it('refuse a fetch without a dispatcher (a plain fetch function would be ignored, and send without the deadline)', () => {
    const options = { baseURL: 'http://127.0.0.1:9/v1', apiKey: 'sk', model: 'gpt-4o-mini' }
    const plain = (async () => new Response('{}')) as unknown as HourglassFetch
    expect(() => openAICompatible({ ...options, fetch: plain })).toThrow(
      /openai adapter: `fetch` must be a createFetch\(\) from @hourglass\/fetch .*got a function \(plain\) without one/,
    )
    expect(() =>
      anthropic({ ...options, fetch: { dispatcher: {} } as unknown as HourglassFetch }),
    ).toThrow(TypeError)
    // null from untyped code: the same message, not a property read on null.
    expect(() =>
      openAICompatible({ ...options, fetch: null as unknown as HourglassFetch }),
    ).toThrow(/got null without one/)
    // A createFetch() is accepted (nothing is sent until a call).
    const real = createFetch()
    expect(gemini({ ...options, fetch: real }).name).toBe('gemini')
    return real.close()
  })

  it('ask for an uncompressed answer (they do not decompress), even when the adapter headers ask otherwise', async () => {
    // A server that compresses unless told not to, as RFC 9110 allows when a
    // request has no Accept-Encoding.
    const seen: Array<string | undefined> = []
    const server = await rawServer((req, res) => {
      seen.push(req.headers['accept-encoding'])
      req.resume()
      const body = completion('plain')
      const identity = req.headers['accept-encoding'] === 'identity'
      res.setHeader('content-type', 'application/json')
      if (!identity) res.setHeader('content-encoding', 'gzip')
      res.end(identity ? body : gzipSync(body))
    })
    try {
      const model = fakes.adapter(
        openAICompatible({
          baseURL: server.baseURL,
          apiKey: 'sk',
          model: 'gpt-4o-mini',
          headers: { 'accept-encoding': 'gzip' },
        }),
      )
      const answer = await callModel({ models: [model], request })
      expect(answer.text).toBe('plain')
      expect(seen).toEqual(['identity'])
    } finally {
      server.close()
    }
  })

  it("send each header once whatever the case it was configured in: the key, content-type and accept-encoding are the adapter's", async () => {
    // Before, `Authorization` from the options and the key's `authorization`
    // both went out: a Node server keeps the first (the configured one, so
    // key rotation silently stopped), a proxy may refuse the request.
    const seen: string[][] = []
    const server = await rawServer((req, res) => {
      seen.push(req.rawHeaders)
      req.resume()
      res.setHeader('content-type', 'application/json')
      res.end(completion('ok'))
    })
    try {
      const model = fakes.adapter(
        openAICompatible({
          baseURL: server.baseURL,
          apiKeys: ['sk-first', 'sk-second'],
          model: 'gpt-4o-mini',
          headers: {
            Authorization: 'Bearer configured',
            'Content-Type': 'text/plain',
            'Accept-Encoding': 'gzip',
            'X-Tenant': 't1',
          },
        }),
      )
      expect((await callModel({ models: [model], request })).text).toBe('ok')
      const pairs = (raw: string[]) =>
        Array.from({ length: raw.length / 2 }, (_, i) => [
          raw[2 * i]!.toLowerCase(),
          raw[2 * i + 1],
        ])
      const sent = pairs(seen[0]!)
      const values = (name: string) => sent.filter(([n]) => n === name).map(([, v]) => v)
      expect(values('authorization')).toEqual(['Bearer sk-first'])
      expect(values('content-type')).toEqual(['application/json'])
      expect(values('accept-encoding')).toEqual(['identity'])
      expect(values('x-tenant')).toEqual(['t1'])
    } finally {
      server.close()
    }
  })

  it('do not follow a redirect: a 3xx is a misplaced endpoint (not retried, the next model is asked) and says where it went', async () => {
    const hits: string[] = []
    const server = await rawServer((req, res) => {
      hits.push(req.url ?? '')
      req.resume()
      res.statusCode = 308
      res.setHeader('location', 'https://api.example.com/v1/chat/completions')
      res.end()
    })
    const backupFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('from the backup'),
    })
    try {
      const moved = fakes.adapter(
        openAICompatible({ baseURL: server.baseURL, apiKey: 'sk', model: 'old' }),
      )
      const backup = fakes.adapter(
        openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk', model: 'backup' }),
      )
      const records: Array<{ decision: string; errorKind?: string | undefined }> = []
      const answer = await callModel({
        models: [moved, backup],
        request,
        onAttempt: (r) => records.push(r),
        retry: { maxAttempts: 3 },
      })
      expect(answer.text).toBe('from the backup')
      expect(hits).toEqual(['/v1/chat/completions'])
      expect(records[0]).toMatchObject({ decision: 'fallback', errorKind: 'not_found' })
      const alone = await callModel({ models: [moved], request }).catch((e: unknown) => e)
      expect(isModelUnavailable(alone)).toBe(true)
      const cause = (alone as ModelUnavailableError).lastCause as ProviderError
      expect(cause.normalized.message).toMatch(
        /^HTTP 308: the provider redirected to https:\/\/api\.example\.com\/v1\/chat\/completions; adapters do not follow redirects/,
      )
    } finally {
      server.close()
    }
  })

  it('Gemini: x-goog-api-key, RetryInfo.retryDelay honoured, then the streamed answer', async () => {
    const fake = await fakes.start({ dialect: 'gemini' })
    fake.enqueue(geminiErrors.resourceExhausted({ retryDelay: '0.05s' }), reply.text('Hallo!'))
    const model = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'AIza-test', model: 'gemini-2.5-flash' }),
    )
    const delays: Array<number | undefined> = []
    const stream = callModel({
      models: [model],
      request: { ...request, stream: true },
      onAttempt: (r) => delays.push(r.delayMs),
      retry: { delay: { hintJitterRatio: 0 } },
    })
    let text = ''
    for await (const event of stream) if (event.type === 'text') text += event.text
    expect(text).toBe('Hallo!')
    // The hint became the provider's cooldown; the record shows what was left
    // of it when the retry was decided (50 ms less the time since the 429:
    // none left when a loaded machine took longer than that to decide).
    expect(delays[0]).toBeGreaterThanOrEqual(0)
    expect(delays[0]).toBeLessThanOrEqual(50)
    expect(fake.requests).toHaveLength(2)
    // …and the retry went when it was over, not before.
    const gapMs = fake.requests[1]!.receivedAtMs - fake.requests[0]!.receivedAtMs
    expect(gapMs).toBeGreaterThanOrEqual(49)
    expect(fake.requests[1]?.headers['x-goog-api-key']).toBe('AIza-test')
    expect(fake.requests[1]?.path).toMatch(/gemini-2\.5-flash:streamGenerateContent$/)
  })

  it('rotates several keys round-robin when no admission chooses', async () => {
    const fake = await fakes.start({ dialect: 'deepseek' })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['k1', 'k2'],
        model: 'deepseek-chat',
        dialect: 'deepseek',
      }),
    )
    for (let i = 0; i < 3; i++)
      await callModel({ models: [model], request, limits: { admission: false } })
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['k1', 'k2', 'k1'])
  })
  it('goes on at once with the next key when one is rejected, and fails only when every key is (without admission)', async () => {
    const fake = await fakes.start({ dialect: 'deepseek' })
    fake.setReply((r) =>
      r.apiKey === 'good'
        ? reply.text('ok')
        : reply.error(401, {
            error: {
              message: 'Authentication Fails',
              type: 'authentication_error',
              code: 'invalid_api_key',
            },
          }),
    )
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['bad-1', 'bad-2', 'good'],
        model: 'deepseek-chat',
        dialect: 'deepseek',
      }),
    )
    const answer = await callModel({ models: [model], request, limits: { admission: false } })
    expect(answer.text).toBe('ok')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['bad-1', 'bad-2', 'good'])

    const allBad = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['bad-1', 'bad-2'],
        model: 'deepseek-chat',
        dialect: 'deepseek',
      }),
    )
    const before = fake.requests.length
    await expect(
      callModel({
        models: [allBad],
        request,
        retry: { maxAttempts: 5 },
        limits: { admission: false },
      }),
    ).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    // Each key once: a rejected key is never sent twice in one call.
    expect(fake.requests.slice(before).map((r) => r.apiKey)).toEqual(['bad-1', 'bad-2'])
  })

  it('with the default admission, a key rejected once is retired for every later call of the process', async () => {
    const fake = await fakes.start({ dialect: 'deepseek' })
    fake.setReply((r) =>
      r.apiKey === 'good'
        ? reply.text('ok')
        : reply.error(401, {
            error: { message: 'Authentication Fails', type: 'authentication_error' },
          }),
    )
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['bad-1', 'good'],
        model: 'deepseek-chat',
        dialect: 'deepseek',
      }),
    )
    expect((await callModel({ models: [model], request })).text).toBe('ok')
    expect((await callModel({ models: [model], request })).text).toBe('ok')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['bad-1', 'good', 'good'])
  })
})
