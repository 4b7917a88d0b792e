import diagnostics from 'node:diagnostics_channel'
import { expressChannels } from '@hourglass/express'
import { instrumentDeadlines } from '@hourglass/otel'
import { type FakeProvider, openAIErrors, qwenErrors, reply } from '@hourglass/testkit'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

describe('API keys: rotated when limited, retired when rejected, never shown', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  it('a key that hits 429 cools down and the next request goes out with the second key', async () => {
    const { fake, entry } = await fakeProvider('openai', [
      'sk-first-key-0001',
      'sk-second-key-0002',
    ])
    fakes.push(fake)
    harness = await startHarness({
      providers: { openai: entry },
      models: { m: fallback(['openai', 'gpt-4o-mini']) },
    })
    fake.enqueue(
      openAIErrors.rateLimited({ retryAfterS: 20 }),
      reply.text('answered with key two'),
      reply.text('again key two'),
    )
    const first = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(first.choices[0]?.message.content).toBe('answered with key two')
    const second = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(second.choices[0]?.message.content).toBe('again key two')
    // The first key is cooling for the 20 s the provider asked: only the second is used.
    expect(fake.requests.map((r) => r.apiKey)).toEqual([
      'sk-first-key-0001',
      'sk-second-key-0002',
      'sk-second-key-0002',
    ])
  })

  it('a key rejected as invalid is retired: the same request goes on with the next key, and later requests never send it again', async () => {
    const { fake, entry } = await fakeProvider('qwen', ['qwen-bad-key-aaaa', 'qwen-good-key-bbbb'])
    fakes.push(fake)
    harness = await startHarness({
      providers: { qwen: entry },
      models: { m: fallback(['qwen', 'qwen-plus']) },
    })
    fake.setReply((request) =>
      request.apiKey === 'qwen-bad-key-aaaa'
        ? reply.error(401, {
            code: 'InvalidApiKey',
            message: 'Invalid API-key provided.',
            request_id: 'r1',
          })
        : reply.text('ok'),
    )
    // A rejected key is the key's problem, not the request's: the first call
    // goes on at once with the provider's other key.
    for (let i = 0; i < 4; i++) {
      const answer = await harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: `q${i}` }],
      })
      expect(answer.choices[0]?.message.content).toBe('ok')
    }
    expect(fake.requests.map((r) => r.apiKey)).toEqual([
      'qwen-bad-key-aaaa',
      'qwen-good-key-bbbb',
      'qwen-good-key-bbbb',
      'qwen-good-key-bbbb',
      'qwen-good-key-bbbb',
    ])
  })

  it("a 429 on key 1, then a 401 on key 2 with the attempts spent: 429 with the cooling key's Retry-After, not a 502 saying every key was rejected", async () => {
    const { fake, entry } = await fakeProvider('openai', [
      'sk-first-key-0001',
      'sk-second-key-0002',
    ])
    fakes.push(fake)
    harness = await startHarness({
      providers: { openai: entry },
      models: { m: fallback(['openai', 'gpt-4o-mini']) },
      policy: { maxAttempts: 2 },
    })
    fake.enqueue(
      openAIErrors.rateLimited({ retryAfterS: 20 }),
      reply.error(401, {
        error: {
          message: 'Incorrect API key provided',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      }),
    )
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(`${res.status} ${body.error.code}`).toBe('429 rate_limit_exceeded')
    // Key 1 is back in the 20 s the provider named: that is when to come
    // back, spread up to 10 % later (test/longRetryAfter.test.ts).
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(15)
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(22)
    expect(res.headers.get('x-should-retry')).not.toBe('false')
    expect(body.error.message).toContain('openai/gpt-4o-mini: auth, another key rate limited')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-first-key-0001', 'sk-second-key-0002'])
  })

  it('a 401 on key 1 with the attempts spent (maxAttempts 1) while key 2 is free: 502 upstream_auth_failed that the SDK may retry, and the retry is served', async () => {
    const { fake, entry } = await fakeProvider('openai', [
      'sk-first-key-0001',
      'sk-second-key-0002',
    ])
    fakes.push(fake)
    harness = await startHarness({
      providers: { openai: entry },
      models: { m: fallback(['openai', 'gpt-4o-mini']) },
      policy: { maxAttempts: 1 },
    })
    fake.enqueue(
      reply.error(401, {
        error: {
          message: 'Incorrect API key provided',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      }),
      reply.text('answered with key two'),
    )
    const ask = () =>
      fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      })
    const res = await ask()
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(
      `${res.status} ${body.error.code} x-should-retry: ${res.headers.get('x-should-retry')}`,
    ).toBe('502 upstream_auth_failed x-should-retry: null')
    expect(body.error.message).toContain('openai/gpt-4o-mini: auth, another key left')
    expect((await ask()).status).toBe(200)
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-first-key-0001', 'sk-second-key-0002'])
  })

  it("a firewall's 403 page set off by a client's prompt retires no key: the other clients are still answered", async () => {
    const { fake, entry } = await fakeProvider('openai', [
      'sk-first-key-0001',
      'sk-second-key-0002',
      'sk-third-key-0003',
    ])
    fakes.push(fake)
    harness = await startHarness({
      providers: { openai: entry },
      models: { m: fallback(['openai', 'gpt-4o-mini']) },
    })
    // What a CDN in front of a provider answers a body its firewall rule
    // matches (an HTML page, not the provider's JSON error), whatever the key.
    fake.setReply((request) =>
      request.rawBody.includes('<script>')
        ? reply.error(
            403,
            '<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head><body>Sorry, you have been blocked</body></html>',
            { 'content-type': 'text/html; charset=UTF-8', server: 'cloudflare' },
          )
        : reply.text('ok'),
    )
    const hostile = { model: 'm', messages: [{ role: 'user' as const, content: '<script>x' }] }
    for (let i = 0; i < 2; i++) {
      await expect(harness.client.chat.completions.create(hostile)).rejects.toMatchObject({
        status: 502,
      })
    }
    const answer = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(answer.choices[0]?.message.content, 'a plain request after the blocked ones').toBe('ok')
    // Each blocked request was sent once (the same body meets the same
    // filter, whatever the key), and the first key was never retired.
    expect(fake.requests.map((r) => r.apiKey)).toEqual([
      'sk-first-key-0001',
      'sk-first-key-0001',
      'sk-first-key-0001',
    ])
  })

  it('no key appears in any log line, error body, response header or span attribute', async () => {
    const exporter = new InMemorySpanExporter()
    const stop = instrumentDeadlines({
      tracerProvider: new BasicTracerProvider({
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      }),
    })
    let ended = 0
    const onEnd = () => {
      ended++
    }
    diagnostics.subscribe(expressChannels.end.name, onEnd)
    try {
      const KEYS = [
        'sk-leak-openai-111111',
        'sk-leak-openai-222222',
        'qwen-plainkey-333333',
        'AIzaLeakGemini444444',
      ]
      const openai = await fakeProvider('openai', [KEYS[0]!, KEYS[1]!])
      const qwen = await fakeProvider('qwen', [KEYS[2]!])
      const gemini = await fakeProvider('gemini', [KEYS[3]!])
      fakes.push(openai.fake, qwen.fake, gemini.fake)
      harness = await startHarness({
        providers: { openai: openai.entry, qwen: qwen.entry, gemini: gemini.entry },
        models: {
          chain: fallback(
            ['openai', 'gpt-4o-mini'],
            ['qwen', 'qwen-plus'],
            ['gemini', 'gemini-2.0-flash'],
          ),
          qwen: fallback(['qwen', 'qwen-plus']),
        },
        policy: { maxAttempts: 1 },
      })
      // Providers that echo the key they were sent, in every way they can fail.
      const echo = (status: number) => (r: { apiKey: string | undefined }) =>
        reply.error(status, {
          error: {
            message: `Incorrect API key provided: ${r.apiKey}`,
            type: 'invalid_request_error',
            code: 'invalid_api_key',
          },
        })
      openai.fake.enqueue(echo(401), echo(401))
      qwen.fake.enqueue((r) =>
        reply.error(400, {
          code: 'InvalidParameter',
          message: `bad key ${r.apiKey} in header`,
          request_id: 'x',
        }),
      )
      const bodies: string[] = []
      const headers: string[] = []
      const call = async (model: string, stream: boolean) => {
        const res = await fetch(`${harness!.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hello' }] }),
        })
        bodies.push(await res.text())
        headers.push(JSON.stringify([...res.headers]))
        return res.status
      }
      // Both openai keys rejected (echoing), qwen refuses echoing the key in a 400.
      expect(await call('chain', false)).toBe(400)
      // Every openai key is now retired; qwen hides a limit in a 200; gemini answers.
      qwen.fake.enqueue(qwenErrors.throttlingIn200())
      gemini.fake.enqueue(reply.text('from gemini'))
      expect(await call('chain', true)).toBe(200)
      // A provider that is down: connection refused.
      await qwen.fake.close()
      expect(await call('qwen', false)).toBe(502)
      await new Promise<void>((resolve) => {
        const check = () => (ended >= 3 ? resolve() : setImmediate(check))
        check()
      })

      const spans = exporter.getFinishedSpans()
      expect(spans.length).toBeGreaterThan(0)
      const haystack = [
        ...harness.logs.map((l) => JSON.stringify(l)),
        ...bodies,
        ...headers,
        ...spans.map((s) =>
          JSON.stringify({
            name: s.name,
            attributes: s.attributes,
            events: s.events,
            status: s.status,
          }),
        ),
      ].join('\n')
      // The run did exercise the key paths: providers saw the keys and echoed them.
      expect(openai.fake.requests.map((r) => r.apiKey)).toEqual([KEYS[0], KEYS[1]])
      expect(haystack).toContain('"content":" gemini"')
      for (const key of KEYS) expect(haystack.includes(key), key).toBe(false)
      // Nor the fakes' hosts: an error names providers, never where they live.
      for (const fake of [openai.fake, qwen.fake, gemini.fake]) {
        expect(bodies.join('\n').includes(new URL(fake.url).host)).toBe(false)
      }
    } finally {
      diagnostics.unsubscribe(expressChannels.end.name, onEnd)
      stop()
    }
  })
})
