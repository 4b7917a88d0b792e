import { once } from 'node:events'
import { request, type Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, diag, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { RPCType, setRPCMetadata, W3CTraceContextPropagator } from '@opentelemetry/core'
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A request instrumentation-http does not trace — Node hands an `Expect:
 * 100-continue` request to 'checkContinue', not to 'request' — traced by a
 * span of your own around the app, as the README's Limits advise. With
 * instrumentation-express on, the span active in deadline() is that
 * instrumentation's `middleware - hourglassDeadline`, ended at `next()`, and
 * your span is only its parent, which @opentelemetry/api does not reach: the
 * deadline is found on your span when you set it as the request's RPC
 * metadata, as instrumentation-http does for its own (the README's snippet).
 */

const otel = setupOtel()
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
let server: Server
let port: number

beforeAll(async () => {
  trace.setGlobalTracerProvider(otel.tracerProvider)
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  // Before express and http are loaded: the instrumentations patch them as they are required.
  const instrumentations = [new HttpInstrumentation(), new ExpressInstrumentation()]
  for (const i of instrumentations) i.setTracerProvider(otel.tracerProvider)
  uninstrument = () => {
    for (const i of instrumentations) i.disable()
  }
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
  // Required, not imported: instrumentation-express patches express through require's hook.
  const express = createRequire(import.meta.url)('express') as typeof import('express')
  const { deadline, deadlineErrors } = await import('@hourglass/express')
  const { createServer } = await import('node:http')
  const app = express()
  app.use(deadline({ defaultMs: 2000 }))
  // Never answers: the deadline's 504 does.
  app.post(['/rpc/slow', '/plain/slow'], (req) => {
    req.resume()
  })
  app.use(deadlineErrors())
  server = createServer(app)
  server.on('checkContinue', (req, res) => {
    const span = otel.tracer.startSpan(`mine ${req.url}`, { kind: SpanKind.SERVER })
    res.on('close', () => span.end())
    res.writeContinue()
    const ctx = trace.setSpan(context.active(), span)
    if (req.url?.startsWith('/rpc')) {
      // The README's way: your span as the request's RPC metadata.
      context.with(setRPCMetadata(ctx, { type: RPCType.HTTP, span }), () => app(req, res))
    } else {
      // Only made active.
      context.with(ctx, () => app(req, res))
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  port = (server.address() as AddressInfo).port
})

afterAll(async () => {
  stop()
  uninstrument()
  server?.closeAllConnections()
  server?.close()
  diag.disable()
  await otel.shutdown()
})

beforeEach(() => {
  otel.exporter.reset()
})

/** POSTs with `Expect: 100-continue`; resolves with the status and, once it has ended, your span. */
async function continued(path: string): Promise<[number | undefined, ReadableSpan]> {
  const status = await new Promise<number | undefined>((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      method: 'POST',
      headers: { expect: '100-continue', 'content-length': 2, 'x-deadline-remaining-ms': '100' },
    })
    req.on('continue', () => req.end('{}'))
    req.on('response', (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    })
    req.on('error', reject)
  })
  const name = `mine ${path}`
  const spans = await otel.spansWhere((all) => all.some((s) => s.name === name))
  return [status, spans.find((s) => s.name === name) as ReadableSpan]
}

const hourglassKeys = (span: ReadableSpan) =>
  Object.keys(span.attributes).filter((k) => k.startsWith('hourglass.'))

describe('your span around the app, with instrumentation-express on', () => {
  it('set as the RPC metadata: takes the deadline, its exceeded event, outcome and ERROR', async () => {
    const [status, mine] = await continued('/rpc/slow')
    expect(status).toBe(504)
    expect(mine.attributes).toMatchObject({
      'hourglass.deadline.budget_ms': 100,
      'hourglass.deadline.source': 'x-deadline-remaining-ms',
      'hourglass.deadline.outcome': 'expired',
      'error.type': 'DEADLINE_EXCEEDED',
    })
    expect(mine.events.map((e) => e.name)).toContain('hourglass.deadline.exceeded')
    expect(mine.status.code).toBe(SpanStatusCode.ERROR)
    const middleware = otel.exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'middleware - hourglassDeadline')
    expect(middleware.length).toBeGreaterThan(0)
    expect(middleware.flatMap(hourglassKeys)).toEqual([])
  })

  it('only made active: gets nothing of the deadline (the README Limits say so)', async () => {
    const [status, mine] = await continued('/plain/slow')
    expect(status).toBe(504)
    expect(hourglassKeys(mine)).toEqual([])
    expect(mine.events).toEqual([])
  })
})
