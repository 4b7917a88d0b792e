import { instrumentDeadlines } from '@hourglass/otel'
import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('x-request-id', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function twoProviders() {
    const a = await fakeProvider('openai', ['key-a'])
    const b = await fakeProvider('qwen', ['key-b'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness(
      {
        providers: { a: a.entry, b: b.entry },
        models: { m: fallback(['a', 'model-a'], ['b', 'model-b']) },
        policy: { maxAttempts: 1 },
      },
      // Every attempt's line, the answering one's too (debug).
      { logLevel: 'debug' },
    )
    return { a: a.fake, b: b.fake }
  }

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${harness!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const ask = { model: 'm', messages: [{ role: 'user', content: 'hi' }] }

  it('a valid id is kept, echoed, and in every log line of its request (one attempt per provider too)', async () => {
    const { a, b } = await twoProviders()
    a.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    b.enqueue(reply.text('from b'))
    const res = await post(ask, { 'x-request-id': 'req-42/alph' })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-request-id')).toBe('req-42/alph')
    const lines = harness!.logs.filter((l) => l.requestId === 'req-42/alph')
    expect(lines.map((l) => l.event)).toEqual(['attempt', 'attempt', 'request'])
    expect(harness!.logs.filter((l) => l.event === 'request' || l.event === 'attempt')).toEqual(
      lines,
    )
  })

  it('a missing, too long or unprintable id is replaced by a fresh UUID', async () => {
    await twoProviders()
    const ids = new Set<string>()
    for (const sent of [undefined, 'x'.repeat(129), 'has space', 'tab\there', 'ünïcode']) {
      const res = await post(ask, sent === undefined ? {} : { 'x-request-id': sent })
      const id = res.headers.get('x-request-id') ?? ''
      expect(id).toMatch(UUID)
      ids.add(id)
    }
    expect(ids.size).toBe(5)
    const longest = 'y'.repeat(128)
    expect((await post(ask, { 'x-request-id': longest })).headers.get('x-request-id')).toBe(longest)
  })

  it('is on every response: errors, health, models, metrics, and the 404 for an unknown path', async () => {
    await twoProviders()
    const responses = await Promise.all([
      post('{"model": "m", "messages": ['),
      post({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
      fetch(`${harness!.url}/healthz`),
      fetch(`${harness!.url}/readyz`),
      fetch(`${harness!.url}/v1/models`),
      fetch(`${harness!.url}/metrics`),
      fetch(`${harness!.url}/v2/nothing`),
    ])
    expect(responses.map((r) => r.status)).toEqual([400, 404, 200, 200, 200, 200, 404])
    for (const r of responses) expect(r.headers.get('x-request-id')).toMatch(UUID)
    // The body error is logged too, with its id.
    const bad = responses[0]!.headers.get('x-request-id')
    expect(harness!.logs.filter((l) => l.requestId === bad)).toMatchObject([
      { event: 'request', status: 400, error: 'invalid_json' },
    ])
  })

  it('is on the 504 the deadline answers', async () => {
    const { a } = await twoProviders()
    a.enqueue(reply.text('late', { latencyMs: 2000 }))
    const res = await post(ask, { 'x-deadline-remaining-ms': '150', 'x-request-id': 'late-1' })
    expect(res.status).toBe(504)
    expect(res.headers.get('x-request-id')).toBe('late-1')
    expect(harness!.logs.find((l) => l.event === 'request')).toMatchObject({
      requestId: 'late-1',
      status: 504,
      error: 'deadline_exceeded',
    })
  })

  it('is on every span of its request (real SDK, in-memory exporter), and two concurrent requests never mix', async () => {
    const exporter = new InMemorySpanExporter()
    const stop = instrumentDeadlines({
      tracerProvider: new BasicTracerProvider({
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      }),
    })
    try {
      const { a, b } = await twoProviders()
      // Each request: a 429 from A (a model attempt and an egress span), then B answers.
      a.enqueue(
        openAIErrors.rateLimited({ retryAfterS: 0 }),
        openAIErrors.rateLimited({ retryAfterS: 0 }),
      )
      b.enqueue(reply.text('one', { latencyMs: 30 }), reply.text('two', { latencyMs: 30 }))
      const [one, two] = await Promise.all([
        post(ask, { 'x-request-id': 'span-req-1' }),
        post(ask, { 'x-request-id': 'span-req-2' }),
      ])
      expect([one.status, two.status]).toEqual([200, 200])
      const spans = exporter.getFinishedSpans()
      const byId = (id: string) =>
        spans.filter((s) => s.attributes['hourglass.request_id'] === id).map((s) => s.name)
      for (const id of ['span-req-1', 'span-req-2']) {
        const names = byId(id)
        // Two model attempts (A refused, B answered) and their two egress attempts.
        expect(names.filter((n) => n.startsWith('chat ')).sort()).toEqual([
          'chat model-a',
          'chat model-b',
        ])
        expect(names.filter((n) => n.startsWith('deadline.egress'))).toHaveLength(2)
      }
      // Every span the gateway's work produced carries one of the two ids.
      expect(spans.filter((s) => s.attributes['hourglass.request_id'] === undefined)).toEqual([])
    } finally {
      stop()
    }
  })
})
