import { once } from 'node:events'
import { request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { ManualClock } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { faultServer } from '@hourglass/testkit'
import { diag, SpanKind } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { jsonUnary } from './helpers/jsonUnary.js'
import { collectDiagWarnings, instrumentHttpAndUndici, setupOtel } from './helpers/otel.js'

/**
 * What reaches the request's span after instrumentation-http has ended it:
 * it ends the server span on the response's 'close', before
 * @hourglass/express hears that the caller left, and a late write comes
 * after the answer by definition. Nothing may be written to the ended span —
 * the SDK drops it and says so through diag on every such request.
 */

const otel = setupOtel()
const warnings: string[] = []
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
let server: Server
let base: string
let lateWrite: Promise<void>
let lateWritten: () => void = () => {}
let slowEntered: Promise<void>
let enteredSlow: () => void = () => {}
let upstream: Awaited<ReturnType<typeof faultServer>>
const manualClock = new ManualClock()
let neverEndedClosed: () => void = () => {}
/** A gRPC server whose method never answers, and a deadline-intercepted client of it. */
let grpcHeld: Promise<void>
let grpcCalled: () => void = () => {}
let closeGrpc: () => void = () => {}

beforeAll(async () => {
  collectDiagWarnings(warnings)
  // Before express and http are loaded: the instrumentations patch them as they are required.
  uninstrument = instrumentHttpAndUndici(otel.tracerProvider)
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  const express = (await import('express')).default
  const { deadline, deadlineErrors } = await import('@hourglass/express')
  const { createServer } = await import('node:http')
  const { createFetch } = await import('@hourglass/fetch')
  const hfetch = createFetch({ retry: { statuses: [503] } })
  const app = express()
  app.get('/then-notify', async (_req, res) => {
    // Answers first, then tells another service, outside any deadline (a route ahead of the middleware): the
    // call (and its retry) runs in the request's context after its span ended.
    res.json({ ok: true })
    await once(res, 'close')
    await (await hfetch(`${upstream.url}/notify`)).text()
  })
  // A slice started by hand and never ended (no `plan.end`), on a clock the
  // test moves: the request's span is not held for it past the limit.
  app.get(
    '/slice-never-ended',
    deadline({ defaultMs: 2000, plan: { work: 1 }, clock: manualClock }),
    async (req, res) => {
      req.plan?.slice('work')
      res.on('close', () => neverEndedClosed())
      await new Promise(() => {})
    },
  )
  // grpc-js after instrumentation-http too (it loads node:http for proxies).
  const grpc = await import('@grpc/grpc-js')
  const { deadlineInterceptor } = await import('@hourglass/grpc')
  const holdService = { hold: jsonUnary('/shop.Stock/Hold') }
  const grpcServer = new grpc.Server()
  grpcServer.addService(holdService, { hold: () => grpcCalled() })
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  )
  const Stock = grpc.makeGenericClientConstructor(holdService, 'Stock')
  const stock = new Stock(`127.0.0.1:${grpcPort}`, grpc.credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  }) as unknown as {
    hold(request: unknown, callback: (error: Error | null) => void): void
    close(): void
  }
  closeGrpc = () => {
    stock.close()
    grpcServer.forceShutdown()
  }
  app.use(deadline({ defaultMs: 2000, plan: { work: 1 } }))
  app.get('/grpc-call', (_req, res, next) => {
    // An outbound gRPC call made in the handler itself, not in a slice.
    stock.hold({}, (error) => (error ? next(error) : res.json({})))
  })
  app.get('/late', async (_req, res) => {
    // Ignores its deadline: the middleware answers 504 at 80 ms, this writes after.
    await delay(200)
    res.json({ late: true })
    lateWritten()
  })
  app.get('/slow', async (req, res, next) => {
    enteredSlow()
    try {
      await req.plan?.run('work', (signal) => delay(5000, undefined, { signal }))
      res.json({})
    } catch (error) {
      next(error)
    }
  })
  app.get('/slow-call', async (req, res, next) => {
    // A slice that calls another service, which holds the call: the caller leaves meanwhile.
    try {
      await req.plan?.run('work', async () => {
        const answer = await hfetch(`${upstream.url}/hold`)
        await answer.text()
      })
      res.json({})
    } catch (error) {
      next(error)
    }
  })
  app.use(deadlineErrors())
  server = createServer(app)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  closeGrpc()
  await upstream?.close()
  stop()
  uninstrument()
  server.closeAllConnections()
  server.close()
  await otel.shutdown()
  diag.disable()
})

beforeEach(async () => {
  await upstream?.close()
  // A notified service that fails once with a 503, then accepts.
  upstream = await faultServer((_req, i) =>
    i === 0 ? { type: 'respond', status: 503 } : { type: 'respond', status: 204 },
  )
  otel.exporter.reset()
  warnings.length = 0
  lateWrite = new Promise((resolve) => {
    lateWritten = resolve
  })
  slowEntered = new Promise((resolve) => {
    enteredSlow = resolve
  })
  grpcHeld = new Promise((resolve) => {
    grpcCalled = resolve
  })
})

const serverSpan = (spans: ReadableSpan[]) => spans.find((s) => s.kind === SpanKind.SERVER)
const endedSpanWarnings = () => warnings.filter((w) => /ended Span/i.test(w))

describe('the request span after instrumentation-http ended it', () => {
  it('a handler that writes after its 504 leaves the ended server span alone, without a diag warning', async () => {
    const answer = await fetch(`${base}/late`, { headers: { 'x-deadline-remaining-ms': '80' } })
    expect(answer.status).toBe(504)
    await answer.text()
    await lateWrite
    const spans = await otel.spansWhere((s) => serverSpan(s) !== undefined)
    expect(serverSpan(spans)?.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'expired',
    })
    expect(endedSpanWarnings()).toEqual([])
  })

  it('a caller that leaves is on the server span (its event and outcome), counted, and its slice cancelled, without a diag warning', async () => {
    const req = request(`${base}/slow`)
    req.on('error', () => {})
    req.end()
    await slowEntered
    req.destroy()
    const spans = await otel.spansWhere((s) =>
      s.some((span) => span.attributes['hourglass.deadline.slice.outcome'] === 'cancelled'),
    )
    const span = serverSpan(spans)
    // @hourglass/express hears the 'close' before instrumentation-http ends the span on it.
    expect(span?.events.map((e) => e.name)).toContain('hourglass.deadline.client_closed')
    expect(span?.attributes['hourglass.deadline.outcome']).toBe('client-closed')
    // The counter still sees it (metrics do not depend on the span being open).
    await expect.poll(() => otel.counter('hourglass.deadline.client_closed')).toBe(1)
    expect(endedSpanWarnings()).toEqual([])
  })

  it('a caller that leaves mid-call: the slice and egress spans of its request end before its server span, not after', async () => {
    await upstream.close()
    // Holds every call: only the caller's departure ends it.
    upstream = await faultServer(() => ({ type: 'hang' }))
    const req = request(`${base}/slow-call`)
    req.on('error', () => {})
    req.end()
    await once(upstream.server, 'request')
    req.destroy()
    // Ours, the upstream's server span and undici's client span between: all of
    // them ended, so none is left to land in the next test.
    const spans = await otel.spansWhere(
      (s) =>
        s.filter((span) => span.kind === SpanKind.SERVER).length === 2 &&
        s.some((span) => span.kind === SpanKind.CLIENT) &&
        s.some((span) => span.name === 'deadline.slice work') &&
        s.some((span) => span.name === 'deadline.egress GET'),
    )
    const server = spans.find(
      (span) => span.kind === SpanKind.SERVER && span.parentSpanContext === undefined,
    ) as ReadableSpan
    const children = spans.filter((span) => span.name.startsWith('deadline.'))
    expect(children.map((c) => c.name).sort()).toEqual([
      'deadline.egress GET',
      'deadline.slice work',
    ])
    const parents = new Map(spans.map((span) => [span.spanContext().spanId, span]))
    const order = spans.map((span) => span.name)
    for (const child of children) {
      // Under the request's span, and ended (handed to the exporter by the
      // SimpleSpanProcessor as it ends) before it. Not by their end times:
      // the SDK anchors each span's clock to Date.now() at its start, and
      // spans ended in one moment differ by a fraction of a millisecond.
      let up = child
      while (up.parentSpanContext !== undefined && up !== server)
        up = parents.get(up.parentSpanContext.spanId) as ReadableSpan
      expect(up).toBe(server)
      expect(order.indexOf(child.name)).toBeLessThan(spans.indexOf(server))
    }
    expect(children.find((c) => c.name === 'deadline.slice work')?.attributes).toMatchObject({
      'hourglass.deadline.slice.outcome': 'cancelled',
    })
    expect(children.find((c) => c.name === 'deadline.egress GET')?.attributes).toMatchObject({
      'error.type': 'CLIENT_CLOSED',
    })
    expect(server.attributes['hourglass.deadline.outcome']).toBe('client-closed')
    expect(endedSpanWarnings()).toEqual([])
  })

  it("a caller that leaves mid-call: the CLIENT span of the handler's outbound gRPC call ends before its server span, not after", async () => {
    const req = request(`${base}/grpc-call`)
    req.on('error', () => {})
    req.end()
    await grpcHeld
    req.destroy()
    const spans = await otel.spansWhere(
      (s) => serverSpan(s) !== undefined && s.some((span) => span.name === 'shop.Stock/Hold'),
    )
    const server = serverSpan(spans) as ReadableSpan
    const call = spans.find((span) => span.name === 'shop.Stock/Hold') as ReadableSpan
    expect(call.kind).toBe(SpanKind.CLIENT)
    expect(call.parentSpanContext?.spanId).toBe(server.spanContext().spanId)
    expect(call.attributes['hourglass.deadline.outcome']).toBe('cancelled')
    expect(server.attributes['hourglass.deadline.outcome']).toBe('client-closed')
    // Handed to the exporter as they end (see the test above): the child first.
    expect(spans.indexOf(call)).toBeLessThan(spans.indexOf(server))
    expect(endedSpanWarnings()).toEqual([])
  })

  it('a caller that leaves while a slice that never ends is open: its server span is held 1 s on the deadline clock at most', async () => {
    const closed = new Promise<void>((resolve) => {
      neverEndedClosed = resolve
    })
    const req = request(`${base}/slice-never-ended`)
    req.on('error', () => {})
    req.end()
    // The handler runs once its 'close' listener is on; wait for the request to reach it.
    await expect.poll(() => manualClock.pendingTimers).toBeGreaterThan(0)
    req.destroy()
    await closed
    // instrumentation-http has ended the span on that same 'close': held, it is not exported.
    const isOurs = (span: ReadableSpan) =>
      span.kind === SpanKind.SERVER && span.parentSpanContext === undefined
    expect(otel.exporter.getFinishedSpans().filter(isOurs)).toEqual([])
    manualClock.advance(999)
    expect(otel.exporter.getFinishedSpans().filter(isOurs)).toEqual([])
    manualClock.advance(1)
    const spans = await otel.spansWhere((s) => s.some(isOurs))
    expect(spans.find(isOurs)?.attributes['hourglass.deadline.outcome']).toBe('client-closed')
    expect(endedSpanWarnings()).toEqual([])
  })

  it('a retry decided after the answer (work the handler left running) leaves the ended server span alone, without a diag warning', async () => {
    const answer = await fetch(`${base}/then-notify`)
    expect(answer.status).toBe(200)
    await answer.json()
    const spans = await otel.spansWhere(
      (s) =>
        serverSpan(s) !== undefined &&
        s.filter((span) => span.name === 'deadline.egress GET').length === 2,
    )
    // The retry happened: two attempts, children of the request's span.
    const attempts = spans.filter((span) => span.name === 'deadline.egress GET')
    expect(attempts.map((a) => a.attributes['http.response.status_code'])).toEqual([503, 204])
    expect(attempts.map((a) => a.parentSpanContext?.spanId)).toEqual([
      serverSpan(spans)?.spanContext().spanId,
      serverSpan(spans)?.spanContext().spanId,
    ])
    expect(serverSpan(spans)?.events.map((e) => e.name)).toEqual([])
    expect(endedSpanWarnings()).toEqual([])
  })
})
