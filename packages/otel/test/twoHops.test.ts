import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import type { SliceReport } from '@hourglass/core'
import type { HourglassFetch } from '@hourglass/fetch'
import { formatWaterfall, instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { NextFunction, Request, Response } from 'express'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { instrumentHttpAndUndici, setupOtel } from './helpers/otel.js'

/**
 * The real chain: client → Express app "quote" (@hourglass/express) →
 * @hourglass/fetch → Express app "price" (@hourglass/express), with the stock
 * OpenTelemetry http and undici instrumentations making the server and client
 * spans, and instrumentDeadlines adding the deadline's. Run on both Express
 * majors @hourglass/express supports.
 */

const otel = setupOtel()
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
const servers: Server[] = []
let hfetch: HourglassFetch
let quoteUrl: string
let priceUrl: string
/** What each hop's plan reported when its handler finished, by path. */
const reports = new Map<string, SliceReport[]>()

type Handler = (req: Request, res: Response) => Promise<void>

async function listen(app: (req: never, res: never) => void): Promise<string> {
  const { createServer } = await import('node:http')
  const server = createServer(app as never)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

beforeAll(async () => {
  // Before express and http are loaded: the instrumentations patch them as they are required.
  uninstrument = instrumentHttpAndUndici(otel.tracerProvider)
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })

  const { createFetch } = await import('@hourglass/fetch')
  hfetch = createFetch()
})

type ExpressFactory = () => import('express').Express

/** The two apps, on the Express major under test. */
async function startChain(express: ExpressFactory): Promise<void> {
  const { deadline, deadlineErrors } = await import('@hourglass/express')
  const route =
    (fn: Handler) =>
    (req: Request, res: Response, next: NextFunction): void => {
      fn(req, res).catch(next)
    }

  const price = express()
  price.use(deadline({ plan: { lookup: 3, format: 1 }, reserveMs: 10 }))
  price.get(
    '/price',
    route(async (req, res) => {
      await req.plan?.run('lookup', () => delay(30))
      const body = await req.plan?.run('format', () => ({ price: 42 }))
      reports.set('/price', req.plan?.report() ?? [])
      res.json(body)
    }),
  )
  price.get(
    '/stuck',
    route(async (req) => {
      // A lookup that ignores its signal: the slice runs out, deadlineErrors answers 504.
      await req.plan?.run('lookup', () => new Promise(() => {}))
    }),
  )
  price.use(deadlineErrors())
  priceUrl = await listen(price)

  const quote = express()
  quote.use(deadline({ plan: { prepare: 1, upstream: 4 }, reserveMs: 10 }))
  quote.get(
    '/quote/:path',
    route(async (req, res) => {
      await req.plan?.run('prepare', () => delay(20))
      const upstream = await req.plan?.run('upstream', async () => {
        const r = await hfetch(`${priceUrl}/${req.params.path}`)
        return { status: r.status, body: await r.text() }
      })
      reports.set(`/quote/${req.params.path}`, req.plan?.report() ?? [])
      res
        .status(upstream?.status ?? 500)
        .type('json')
        .send(upstream?.body)
    }),
  )
  quote.use(deadlineErrors())
  quoteUrl = await listen(quote)
}

async function stopChain(): Promise<void> {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    s.close()
    await once(s, 'close')
  }
}

afterAll(async () => {
  stop()
  uninstrument()
  await hfetch.close()
  await otel.shutdown()
})

beforeEach(() => {
  otel.exporter.reset()
  reports.clear()
})

function server(spans: ReadableSpan[], path: string): ReadableSpan {
  const found = spans.find((s) => s.kind === SpanKind.SERVER && s.attributes['url.path'] === path)
  if (!found) throw new Error(`no server span for ${path}`)
  return found
}

function named(spans: ReadableSpan[], name: string, parent: ReadableSpan): ReadableSpan {
  const found = spans.filter(
    (s) => s.name === name && s.parentSpanContext?.spanId === parent.spanContext().spanId,
  )
  if (found.length !== 1) throw new Error(`expected one ${name} under ${parent.name}`)
  return found[0] as ReadableSpan
}

/** Both servers' spans end on 'finish'; wait for them (and the hop's spans) rather than sleep. */
function twoServerSpans(spans: ReadableSpan[]): boolean {
  return (
    spans.filter((s) => s.kind === SpanKind.SERVER && s.attributes['hourglass.deadline.outcome'])
      .length === 2 &&
    spans.some((s) => s.kind === SpanKind.CLIENT && s.parentSpanContext === undefined)
  )
}

const majors: Array<[string, () => Promise<ExpressFactory>]> = [
  ['express 5', async () => (await import('express')).default],
  ['express 4', async () => (await import('express4')).default as unknown as ExpressFactory],
]

describe.each(majors)('two hops: client → %s → @hourglass/fetch → Express', (_, load) => {
  beforeAll(async () => startChain(await load()))
  afterAll(stopChain)

  it('puts the whole chain in one trace, with the budget shrinking hop by hop', async () => {
    const res = await fetch(`${quoteUrl}/quote/price`, {
      headers: { 'x-deadline-remaining-ms': '1500' },
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ price: 42 })
    const spans = await otel.spansWhere(twoServerSpans)

    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1)
    const hop1 = server(spans, '/quote/price')
    const hop2 = server(spans, '/price')
    const attempt = named(spans, 'deadline.egress GET', hop1)
    const a = (s: ReadableSpan, k: string) => s.attributes[k] as number

    expect(hop1.attributes).toMatchObject({
      'hourglass.deadline.budget_ms': 1500,
      'hourglass.deadline.source': 'x-deadline-remaining-ms',
      'hourglass.deadline.outcome': 'ok',
    })
    expect(hop2.attributes).toMatchObject({
      'hourglass.deadline.source': 'x-deadline-remaining-ms',
      'hourglass.deadline.outcome': 'ok',
    })
    // What hop 1 sent is exactly what hop 2 received.
    expect(a(hop2, 'hourglass.deadline.budget_ms')).toBe(a(attempt, 'hourglass.deadline.header_ms'))
    const shrinking = [
      a(hop1, 'hourglass.deadline.budget_ms'),
      a(hop1, 'hourglass.deadline.remaining_ms'),
      a(attempt, 'hourglass.deadline.header_ms'),
      a(hop2, 'hourglass.deadline.budget_ms'),
      a(hop2, 'hourglass.deadline.remaining_ms'),
    ]
    expect(shrinking).toEqual([...shrinking].sort((x, y) => y - x))
    // Each hop keeps its reserveMs (10) back for writing its own 504.
    expect(a(hop1, 'hourglass.deadline.remaining_ms')).toBeLessThanOrEqual(1490)
    expect(a(hop2, 'hourglass.deadline.remaining_ms')).toBeLessThanOrEqual(
      a(hop2, 'hourglass.deadline.budget_ms') - 10,
    )
    // The upstream call sends the upstream slice's time, not the request's.
    expect(a(attempt, 'hourglass.deadline.remaining_ms')).toBeLessThan(
      a(hop1, 'hourglass.deadline.remaining_ms') - 20,
    )

    // instrumentation-undici's client span sits beside the attempt span; hop 2 is its child.
    const client = spans.find(
      (s) =>
        s.kind === SpanKind.CLIENT && s.parentSpanContext?.spanId === hop1.spanContext().spanId,
    )
    expect(hop2.parentSpanContext?.spanId).toBe(client?.spanContext().spanId)
    expect(attempt.attributes).toMatchObject({
      'hourglass.deadline.attempt': 1,
      'http.response.status_code': 200,
    })
    expect(attempt.attributes).not.toHaveProperty('error.type')

    const waterfall = formatWaterfall(spans)
    if (process.env.HOURGLASS_PRINT_WATERFALL) console.log(waterfall)
    for (const line of waterfall.split('\n')) expect(line.length).toBeLessThanOrEqual(80)
    expect(waterfall).toMatch(/deadline\.slice lookup/)
  })

  it('draws each slice as a child span with the numbers its plan reported', async () => {
    const res = await fetch(`${quoteUrl}/quote/price`, {
      headers: { 'x-deadline-remaining-ms': '1500' },
    })
    await res.arrayBuffer()
    const spans = await otel.spansWhere(twoServerSpans)
    for (const [path, names] of [
      ['/quote/price', ['prepare', 'upstream']],
      ['/price', ['lookup', 'format']],
    ] as const) {
      const parent = server(spans, path)
      const report = reports.get(path) ?? []
      for (const name of names) {
        const slice = named(spans, `deadline.slice ${name}`, parent)
        const row = report.find((r) => r.name === name)
        expect(row?.outcome).toBe('ok')
        expect(slice.attributes).toEqual({
          'hourglass.deadline.slice': name,
          'hourglass.deadline.slice.allotted_ms': row?.allottedMs,
          'hourglass.deadline.slice.used_ms': row?.usedMs,
          'hourglass.deadline.slice.outcome': 'ok',
        })
      }
    }
    const lookup = reports.get('/price')?.find((r) => r.name === 'lookup')
    // 3 of 4 shares of hop 2's budget, less its reserve twice (middleware and plan).
    const hop2 = server(spans, '/price')
    expect(lookup?.allottedMs).toBeGreaterThan(
      0.7 * (hop2.attributes['hourglass.deadline.budget_ms'] as number) - 40,
    )
    expect(lookup?.usedMs).toBeGreaterThanOrEqual(29)
  })

  it('answers 504 from the hop whose slice ran out, and says so on that hop, not the caller', async () => {
    const before = {
      slice: await otel.counter('hourglass.deadline.exceeded', {
        'hourglass.deadline.stage': 'slice',
      }),
      handler: await otel.counter('hourglass.deadline.exceeded', {
        'hourglass.deadline.stage': 'handler',
      }),
      upstream: await otel.counter('hourglass.deadline.exceeded', {
        'hourglass.deadline.stage': 'upstream',
      }),
    }
    const res = await fetch(`${quoteUrl}/quote/stuck`, {
      headers: { 'x-deadline-remaining-ms': '600' },
    })
    expect(res.status).toBe(504)
    await res.arrayBuffer()
    const spans = await otel.spansWhere(twoServerSpans)
    const hop1 = server(spans, '/quote/stuck')
    const hop2 = server(spans, '/stuck')

    const exceeded = hop2.events.filter((e) => e.name === 'hourglass.deadline.exceeded')
    expect(exceeded.map((e) => e.attributes)).toEqual([
      expect.objectContaining({
        'hourglass.deadline.stage': 'handler',
        'hourglass.deadline.slice': 'lookup',
        'hourglass.deadline.action': '504',
      }),
    ])
    expect(hop2.attributes['http.response.status_code']).toBe(504)
    expect(hop2.status.code).toBe(SpanStatusCode.ERROR)
    expect(hop2.attributes['hourglass.deadline.outcome']).toBe('expired')

    const lookup = named(spans, 'deadline.slice lookup', hop2)
    expect(lookup.status.code).toBe(SpanStatusCode.ERROR)
    expect(lookup.events.map((e) => e.name)).toEqual(['hourglass.deadline.exceeded'])
    expect(lookup.attributes['hourglass.deadline.slice.used_ms']).toBeGreaterThanOrEqual(
      (lookup.attributes['hourglass.deadline.slice.allotted_ms'] as number) - 1,
    )

    // The caller's own deadline did not run out: it learns why and does not retry.
    expect(hop1.events.map((e) => e.name)).not.toContain('hourglass.deadline.exceeded')
    expect(hop1.events.filter((e) => e.name === 'hourglass.deadline.retry_skipped')).toEqual([
      expect.objectContaining({
        attributes: {
          'hourglass.deadline.attempt': 1,
          'hourglass.deadline.retry.reason': 'HTTP_504',
          'hourglass.deadline.retry.why': 'upstream-deadline',
        },
      }),
    ])
    const attempt = named(spans, 'deadline.egress GET', hop1)
    expect(attempt.attributes).toMatchObject({
      'http.response.status_code': 504,
      'error.type': '504',
    })

    expect(
      await otel.counter('hourglass.deadline.exceeded', { 'hourglass.deadline.stage': 'slice' }),
    ).toBe(before.slice + 1)
    expect(
      await otel.counter('hourglass.deadline.exceeded', { 'hourglass.deadline.stage': 'handler' }),
    ).toBe(before.handler + 1)
    expect(
      await otel.counter('hourglass.deadline.exceeded', { 'hourglass.deadline.stage': 'upstream' }),
    ).toBe(before.upstream + 1)
  })

  it('records the remaining budget at ingress and egress, and the attempt that succeeded', async () => {
    const ingress = await otel.histogram('hourglass.deadline.ingress.remaining')
    const egress = await otel.histogram('hourglass.deadline.egress.remaining')
    const ok = await otel.counter('hourglass.deadline.calls.succeeded', {
      'hourglass.deadline.attempt': 1,
    })
    const res = await fetch(`${quoteUrl}/quote/price`, {
      headers: { 'x-deadline-remaining-ms': '1500' },
    })
    await res.arrayBuffer()
    await otel.spansWhere(twoServerSpans)
    const ingressAfter = await otel.histogram('hourglass.deadline.ingress.remaining')
    const egressAfter = await otel.histogram('hourglass.deadline.egress.remaining')
    expect(ingressAfter.count - ingress.count).toBe(2)
    expect(ingressAfter.max).toBeLessThanOrEqual(1.49) // seconds
    expect(egressAfter.count - egress.count).toBe(1)
    expect(egressAfter.max).toBeLessThan(1.49)
    expect(
      await otel.counter('hourglass.deadline.calls.succeeded', { 'hourglass.deadline.attempt': 1 }),
    ).toBe(ok + 1)
  })
})
