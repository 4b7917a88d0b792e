import { once } from 'node:events'
import { request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { faultServer } from '@hourglass/testkit'
import { diag, SpanKind } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
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
  app.use(deadline({ defaultMs: 2000, plan: { work: 1 } }))
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
  app.use(deadlineErrors())
  server = createServer(app)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
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
