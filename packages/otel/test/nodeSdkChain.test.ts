import { once } from 'node:events'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { HourglassFetch } from '@hourglass/fetch'
import { context, metrics, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici'
import {
  AggregationTemporality,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics'
import { NodeSDK } from '@opentelemetry/sdk-node'
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

/**
 * The README's promises, outside in, as its first example sets things up:
 * NodeSDK with instrumentation-http, instrumentation-undici and
 * HourglassInstrumentation, DeadlineContextManager around the
 * AsyncLocalStorage one. A request reaches an Express app
 * (@hourglass/express, two slices) that calls a second one on loopback
 * through createFetch; spans come from an in-memory exporter, metrics from a
 * pull reader, and every attribute is looked up by the name the README gives.
 */

class TestMetricReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE })
  }
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

const exporter = new InMemorySpanExporter()
const reader = new TestMetricReader()
let sdk: NodeSDK
let hfetch: HourglassFetch
const servers: Server[] = []
let quoteUrl = ''

async function listen(app: (req: never, res: never) => void): Promise<string> {
  const server = createServer(app as never)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

beforeAll(async () => {
  const { DeadlineContextManager, HourglassInstrumentation } = await import('@hourglass/otel')
  sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation(),
      new UndiciInstrumentation(),
      new HourglassInstrumentation(),
    ],
    contextManager: new DeadlineContextManager(new AsyncLocalStorageContextManager()),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    metricReaders: [reader],
    autoDetectResources: false,
  })
  sdk.start()
  // Loaded after the SDK started: the http instrumentation patches them as they are required.
  const express = (await import('express')).default
  const { deadline, deadlineErrors } = await import('@hourglass/express')
  const { createFetch } = await import('@hourglass/fetch')
  const { runWithRequestId } = await import('@hourglass/core')
  hfetch = createFetch()

  const price = express()
  price.use(deadline({ reserveMs: 10 }))
  price.get('/price', (_req, res) => {
    res.json({ price: 42 })
  })
  const priceUrl = await listen(price as never)
  // Never answers, and has no deadline of its own: the caller's slice is what ends the call.
  const stuckUrl = await listen(() => {})

  const quote = express()
  quote.use((req, _res, next) => runWithRequestId(String(req.headers['x-request-id']), next))
  quote.use(deadline({ plan: { prepare: 1, upstream: 4 }, reserveMs: 10 }))
  quote.get('/quote/:to', async (req, res, next) => {
    try {
      await req.plan?.run('prepare', () => undefined)
      const upstream = await req.plan?.run('upstream', async () => {
        const base = req.params.to === 'stuck' ? stuckUrl : priceUrl
        const r = await hfetch(`${base}/price?user=alice`)
        return { status: r.status, body: await r.text() }
      })
      res
        .status(upstream?.status ?? 500)
        .type('json')
        .send(upstream?.body)
    } catch (error) {
      next(error)
    }
  })
  quote.use(deadlineErrors())
  quoteUrl = await listen(quote as never)
})

afterAll(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    s.close()
  }
  await hfetch?.close()
  await sdk?.shutdown()
  context.disable()
  propagation.disable()
  trace.disable()
  metrics.disable()
})

beforeEach(() => exporter.reset())

/** A plain node:http client, as a caller outside the service would be. */
function get(path: string, budgetMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${quoteUrl}${path}`,
      { headers: { 'x-deadline-remaining-ms': String(budgetMs), 'x-request-id': path } },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** The finished spans once `count` server spans carry an outcome (they end on the response's close). */
async function spansOnceEnded(count: number): Promise<ReadableSpan[]> {
  const ended = () =>
    exporter
      .getFinishedSpans()
      .filter((s) => s.kind === SpanKind.SERVER && s.attributes['hourglass.deadline.outcome'])
  await expect.poll(() => ended().length, { timeout: 5000 }).toBe(count)
  return exporter.getFinishedSpans()
}

function one(spans: ReadableSpan[], where: (s: ReadableSpan) => boolean, what: string) {
  const found = spans.filter(where)
  if (found.length !== 1) throw new Error(`expected one ${what}, got ${found.length}`)
  return found[0] as ReadableSpan
}
const serverAt = (spans: ReadableSpan[], path: string) =>
  one(spans, (s) => s.kind === SpanKind.SERVER && s.attributes['url.path'] === path, path)
const named = (spans: ReadableSpan[], name: string) => one(spans, (s) => s.name === name, name)
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId
const idOf = (s: ReadableSpan) => s.spanContext().spanId

async function points(name: string) {
  const { resourceMetrics }: { resourceMetrics: ResourceMetrics } = await reader.collect()
  const metric = resourceMetrics.scopeMetrics
    .filter((s) => s.scope.name === '@hourglass/otel')
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === name)
  return { unit: metric?.descriptor.unit, points: metric?.dataPoints ?? [] }
}
const sum = (ps: Array<{ value: unknown }>) =>
  ps.reduce((total, p) => total + (typeof p.value === 'number' ? p.value : 0), 0)

describe('NodeSDK + HourglassInstrumentation: an Express request through createFetch', () => {
  it('puts the budget on the server spans, each slice and the attempt in one trace, named as the README says', async () => {
    expect(await get('/quote/price', 1500)).toBe(200)
    const spans = await spansOnceEnded(2)
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1)

    const hop1 = serverAt(spans, '/quote/price')
    expect(hop1.attributes).toMatchObject({
      'hourglass.deadline.budget_ms': 1500,
      'hourglass.deadline.source': 'x-deadline-remaining-ms',
      'hourglass.deadline.clamped': false,
      'hourglass.deadline.mode': 'enforce',
      'hourglass.deadline.outcome': 'ok',
      'hourglass.request_id': '/quote/price',
    })
    expect(hop1.attributes['hourglass.deadline.remaining_ms']).toBeLessThanOrEqual(1490)
    expect(hop1.attributes['hourglass.deadline.elapsed_ms']).toBeGreaterThanOrEqual(0)

    for (const slice of ['prepare', 'upstream']) {
      const span = named(spans, `deadline.slice ${slice}`)
      expect(parentOf(span)).toBe(idOf(hop1))
      expect(span.attributes).toMatchObject({
        'hourglass.deadline.slice': slice,
        'hourglass.deadline.slice.outcome': 'ok',
        'hourglass.request_id': '/quote/price',
      })
      expect(span.attributes['hourglass.deadline.slice.allotted_ms']).toBeGreaterThan(0)
      expect(span.attributes['hourglass.deadline.slice.used_ms']).toBeGreaterThanOrEqual(0)
    }

    const attempt = named(spans, 'deadline.egress GET')
    expect(attempt.kind).toBe(SpanKind.INTERNAL)
    expect(parentOf(attempt)).toBe(idOf(hop1))
    expect(attempt.attributes).toMatchObject({
      'http.request.method': 'GET',
      'hourglass.deadline.attempt': 1,
      'http.response.status_code': 200,
      'hourglass.deadline.bytes_received': 12,
      'hourglass.request_id': '/quote/price',
    })
    // Origin and path: the query (`?user=alice`) may hold secrets.
    expect(attempt.attributes['url.full']).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/price$/)
    expect(attempt.attributes).not.toHaveProperty('http.request.resend_count')
    expect(attempt.attributes).not.toHaveProperty('hourglass.deadline.redirect')
    expect(attempt.status.code).toBe(SpanStatusCode.UNSET)

    // What hop 1 sent is what hop 2 received, under the undici client span.
    const hop2 = serverAt(spans, '/price')
    const undici = one(
      spans,
      (s) => s.kind === SpanKind.CLIENT && parentOf(s) === idOf(hop1),
      'undici span',
    )
    expect(parentOf(hop2)).toBe(idOf(undici))
    expect(hop2.attributes['hourglass.deadline.budget_ms']).toBe(
      attempt.attributes['hourglass.deadline.header_ms'],
    )
    expect(attempt.attributes['hourglass.deadline.header_ms']).toBeLessThanOrEqual(
      attempt.attributes['hourglass.deadline.budget_ms'] as number,
    )

    const ingress = await points('hourglass.deadline.ingress.remaining')
    expect(ingress.unit).toBe('s')
    expect(ingress.points.map((p) => p.attributes)).toEqual([
      {
        'hourglass.deadline.source': 'x-deadline-remaining-ms',
        'hourglass.deadline.mode': 'enforce',
      },
    ])
    const egress = await points('hourglass.deadline.egress.remaining')
    expect(egress.unit).toBe('s')
    expect(egress.points.map((p) => p.attributes)).toEqual([
      { 'http.request.method': 'GET', 'hourglass.deadline.attempt': 1 },
    ])
    const succeeded = await points('hourglass.deadline.calls.succeeded')
    expect(succeeded.points.map((p) => [p.attributes, p.value])).toEqual([
      [{ 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'http' }, 1],
    ])
  })

  it('a slice that runs out: a 504, the exceeded events on the slice and the request span, and the counts', async () => {
    expect(await get('/quote/stuck', 300)).toBe(504)
    const spans = await spansOnceEnded(1)

    const hop1 = serverAt(spans, '/quote/stuck')
    expect(hop1.status.code).toBe(SpanStatusCode.ERROR)
    expect(hop1.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'expired',
      'error.type': 'DEADLINE_EXCEEDED',
    })
    expect(
      hop1.events.find((e) => e.name === 'hourglass.deadline.exceeded')?.attributes,
    ).toMatchObject({
      'hourglass.deadline.stage': 'handler',
      'hourglass.deadline.slice': 'upstream',
      'hourglass.deadline.budget_ms': 300,
      'hourglass.deadline.action': '504',
    })
    const slice = named(spans, 'deadline.slice upstream')
    expect(slice.status.code).toBe(SpanStatusCode.ERROR)
    expect(slice.attributes).toMatchObject({
      'hourglass.deadline.slice.outcome': 'exceeded',
      'error.type': 'DEADLINE_EXCEEDED',
    })
    expect(slice.events.map((e) => [e.name, e.attributes?.['hourglass.deadline.stage']])).toEqual([
      ['hourglass.deadline.exceeded', 'slice'],
    ])
    const attempt = named(spans, 'deadline.egress GET')
    expect(attempt.attributes).toMatchObject({
      'error.type': 'DEADLINE_EXCEEDED',
      'hourglass.deadline.phase': 'headers',
      'hourglass.deadline.bytes_received': 0,
    })

    const exceeded = await points('hourglass.deadline.exceeded')
    expect(exceeded.points.map((p) => [p.attributes, p.value])).toEqual(
      expect.arrayContaining([
        [{ 'hourglass.deadline.stage': 'slice', 'hourglass.deadline.slice': 'upstream' }, 1],
        [{ 'hourglass.deadline.stage': 'handler', 'hourglass.deadline.slice': 'upstream' }, 1],
      ]),
    )
    expect(sum(exceeded.points)).toBe(2)
    const retries = await points('hourglass.deadline.retries')
    expect(retries.points.map((p) => [p.attributes, p.value])).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': 'DEADLINE_EXCEEDED',
          'hourglass.deadline.retry.why': 'no-budget',
          'hourglass.deadline.call.kind': 'http',
        },
        1,
      ],
    ])
  })
})
