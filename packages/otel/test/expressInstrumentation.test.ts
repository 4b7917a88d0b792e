import { once } from 'node:events'
import { type IncomingMessage, request, type Server, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import {
  context,
  diag,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { collectDiagWarnings, setupOtel } from './helpers/otel.js'

/**
 * The request's deadline goes on its HTTP server span with
 * @opentelemetry/instrumentation-express on (getNodeAutoInstrumentations
 * turns it on): that instrumentation runs each middleware in a span of its
 * own, `middleware - hourglassDeadline`, ended when it calls `next()`. The
 * active span at ingress is that one, not the request's; so is a span a
 * middleware ahead of deadline() calls `next()` in. And a request
 * instrumentation-http does not trace has no server span: its deadline goes
 * on no span, not on the one the server was started in.
 */

const otel = setupOtel()
const warnings: string[] = []
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
let server: Server
let base: string
let bareServer: Server
let bareBase: string
let boot: Span
// Resolves as each response of the bare server closes: its end has been heard by then.
const answered: Array<Promise<void>> = []
let hangEntered: Promise<void>
let enteredHang: () => void = () => {}

beforeAll(async () => {
  collectDiagWarnings(warnings)
  trace.setGlobalTracerProvider(otel.tracerProvider)
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  // Before express and http are loaded: the instrumentations patch them as they are required.
  const instrumentations = [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => req.url === '/health',
    }),
    new ExpressInstrumentation(),
  ]
  for (const i of instrumentations) i.setTracerProvider(otel.tracerProvider)
  uninstrument = () => {
    for (const i of instrumentations) i.disable()
  }
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  // Required, not imported: instrumentation-express patches express through
  // require's hook (an `import` of it needs import-in-the-middle's loader).
  const express = createRequire(import.meta.url)('express') as typeof import('express')
  const { deadline, deadlineErrors } = await import('@hourglass/express')
  const { createServer } = await import('node:http')
  const app = express()
  // A middleware ahead of deadline() that calls next() inside a span of its own, already ended.
  app.use('/auth', (_req, _res, next) =>
    otel.tracer.startActiveSpan('auth', (span) => {
      span.end()
      next()
    }),
  )
  // A fixed reserve, not the adaptive one (10–100 ms, from this process's
  // timer lateness, which a loaded box raises): at 100 ms a request sent
  // 100 ms (below) arrived expired, its 504 sent before any handler ran, and
  // the stream below was never started (a run saw its span say 504, not 200).
  app.use(deadline({ defaultMs: 2000, reserveMs: 10 }))
  app.get(['/ok', '/auth/ok'], (_req, res) => {
    res.send('ok')
  })
  // Never answers: the deadline's 504 does.
  app.get(['/slow', '/auth/slow'], () => {})
  app.get('/stream', (_req, res) => {
    // Starts the answer, then never finishes it: the deadline ends it.
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('first part')
  })
  app.get('/hang', () => enteredHang())
  app.use(deadlineErrors())
  server = createServer(app)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  // deadline() alone, outside express's router (which instrumentation-express
  // runs in spans of its own): the span active at ingress is then the one the
  // server was started in, as a service's boot may start it inside a span.
  const hourglass = deadline({ defaultMs: 2000 })
  const bare = (req: IncomingMessage, res: ServerResponse) => {
    const closed = once(res, 'close').then(() => {})
    answered.push(closed)
    hourglass(req as never, res as never, () => res.end('ok'))
  }
  bareServer = createServer(bare)
  // Node hands an `Expect: 100-continue` request to this listener, not to
  // 'request', on which instrumentation-http starts its spans.
  bareServer.on('checkContinue', (req, res) => {
    res.writeContinue()
    bare(req, res)
  })
  boot = otel.tracer.startSpan('boot')
  await context.with(trace.setSpan(context.active(), boot), async () => {
    bareServer.listen(0, '127.0.0.1')
    await once(bareServer, 'listening')
  })
  bareBase = `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}`
})

afterAll(async () => {
  stop()
  uninstrument()
  for (const s of [server, bareServer]) {
    s?.closeAllConnections()
    s?.close()
  }
  diag.disable()
  await otel.shutdown()
})

beforeEach(() => {
  otel.exporter.reset()
  warnings.length = 0
})

const serverSpanOf = (path: string) => (spans: ReadableSpan[]) =>
  spans.find((s) => s.kind === SpanKind.SERVER && s.attributes['url.path'] === path)

async function serverSpanAfter(path: string, budget: string): Promise<ReadableSpan> {
  const answer = await fetch(`${base}${path}`, { headers: { 'x-deadline-remaining-ms': budget } })
  await answer.text().catch(() => {})
  const find = serverSpanOf(path)
  return find(await otel.spansWhere((s) => find(s) !== undefined)) as ReadableSpan
}

describe('with instrumentation-express', () => {
  it('puts the budget and the outcome on the server span, not on the middleware span', async () => {
    const span = await serverSpanAfter('/ok', '1500')
    expect(span.attributes).toMatchObject({
      'hourglass.deadline.budget_ms': 1500,
      'hourglass.deadline.source': 'x-deadline-remaining-ms',
      'hourglass.deadline.mode': 'enforce',
      'hourglass.deadline.outcome': 'ok',
    })
    const middleware = otel.exporter
      .getFinishedSpans()
      .find((s) => s.name === 'middleware - hourglassDeadline')
    // The instrumentation is on: its span exists, and carries nothing of ours.
    expect(middleware).toBeDefined()
    expect(
      Object.keys(middleware?.attributes ?? {}).filter((k) => k.startsWith('hourglass.')),
    ).toEqual([])
  })

  it("puts a 504's exceeded event, outcome and ERROR on the server span", async () => {
    const span = await serverSpanAfter('/slow', '100')
    expect(span.attributes).toMatchObject({
      'http.response.status_code': 504,
      'hourglass.deadline.outcome': 'expired',
      'error.type': 'DEADLINE_EXCEEDED',
    })
    expect(span.events.map((e) => e.name)).toContain('hourglass.deadline.exceeded')
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
  })

  it('fails the server span of a stream the deadline cut, although its status code was 200', async () => {
    const span = await serverSpanAfter('/stream', '100')
    expect(span.attributes).toMatchObject({
      'http.response.status_code': 200,
      'hourglass.deadline.outcome': 'expired',
      'error.type': 'DEADLINE_EXCEEDED',
    })
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
  })

  it('puts a caller that left on the server span (client_closed event, outcome client-closed)', async () => {
    hangEntered = new Promise((resolve) => {
      enteredHang = resolve
    })
    const req = request(`${base}/hang`)
    req.on('error', () => {})
    req.end()
    await hangEntered
    req.destroy()
    const find = serverSpanOf('/hang')
    const span = find(await otel.spansWhere((s) => find(s) !== undefined)) as ReadableSpan
    expect(span.attributes['hourglass.deadline.outcome']).toBe('client-closed')
    expect(span.events.map((e) => e.name)).toContain('hourglass.deadline.client_closed')
  })
})

describe('a middleware ahead of deadline() that calls next() inside its own ended span', () => {
  it('leaves that span alone: the 504 is on the server span, and nothing is written to an ended span', async () => {
    const span = await serverSpanAfter('/auth/slow', '100')
    expect(span.attributes).toMatchObject({
      'hourglass.deadline.budget_ms': 100,
      'hourglass.deadline.outcome': 'expired',
      'error.type': 'DEADLINE_EXCEEDED',
    })
    expect(span.events.map((e) => e.name)).toContain('hourglass.deadline.exceeded')
    const auth = otel.exporter.getFinishedSpans().find((s) => s.name === 'auth')
    expect(auth?.attributes).toEqual({})
    expect(warnings.filter((w) => w.includes('ended Span'))).toEqual([])
  })
})

describe('a request instrumentation-http does not trace', () => {
  const hourglassKeys = (span: Span) =>
    Object.keys((span as unknown as { attributes: Record<string, unknown> }).attributes).filter(
      (k) => k.startsWith('hourglass.'),
    )

  it('(ignoreIncomingRequestHook) writes its deadline on no span: not on the span the server was started in', async () => {
    const answer = await fetch(`${bareBase}/health`, {
      headers: { 'x-deadline-remaining-ms': '1234' },
    })
    expect(answer.status).toBe(200)
    await answer.text()
    await answered.at(-1)
    expect(boot.isRecording()).toBe(true)
    expect(hourglassKeys(boot)).toEqual([])
  })

  it('writes nothing to that span once it has ended (no "ended Span" warning), for an ignored or a checkContinue request', async () => {
    boot.end()
    const answer = await fetch(`${bareBase}/health`, {
      headers: { 'x-deadline-remaining-ms': '999' },
    })
    await answer.text()
    await answered.at(-1)
    // Expect: 100-continue, answered by the 'checkContinue' listener: no server span.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(`${bareBase}/upload`, {
        method: 'POST',
        headers: { expect: '100-continue', 'x-deadline-remaining-ms': '999' },
      })
      req.on('continue', () => req.end('body'))
      req.on('response', (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode))
      })
      req.on('error', reject)
    })
    expect(status).toBe(200)
    await answered.at(-1)
    expect(warnings.filter((w) => w.includes('ended Span'))).toEqual([])
  })
})
