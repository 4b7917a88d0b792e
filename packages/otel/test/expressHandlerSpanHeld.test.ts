import { once } from 'node:events'
import { request, type Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { diag, trace } from '@opentelemetry/api'
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A request cut short while a slice runs, with instrumentation-express on
 * (getNodeAutoInstrumentations turns it on): the slice is a child of that
 * instrumentation's `request handler` span, which it ends on the response's
 * 'close'. Hourglass held the HTTP server span until the slice had ended,
 * but not the span between them: the slice ended after its parent.
 */

const otel = setupOtel()
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
let server: Server
let base: string
let entered: () => void = () => {}
const started = new Promise<void>((resolve) => {
  entered = resolve
})

beforeAll(async () => {
  diag.disable()
  trace.setGlobalTracerProvider(otel.tracerProvider)
  const instrumentations = [new HttpInstrumentation(), new ExpressInstrumentation()]
  for (const i of instrumentations) i.setTracerProvider(otel.tracerProvider)
  uninstrument = () => {
    for (const i of instrumentations) i.disable()
  }
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
  // Required, not imported: instrumentation-express patches express through require's hook.
  const express = createRequire(import.meta.url)('express') as typeof import('express')
  const { deadline } = await import('@hourglass/express')
  const { createServer } = await import('node:http')
  const app = express()
  app.use(deadline({ plan: { work: 1 } }))
  app.get('/cut', (req) => {
    req.plan
      ?.run(
        'work',
        (signal) =>
          new Promise<void>((resolve) => {
            entered()
            // Cancelled work ends a few ticks after its cancellation.
            signal.addEventListener('abort', () => setImmediate(resolve))
          }),
      )
      .catch(() => {})
  })
  server = createServer(app)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  stop?.()
  uninstrument()
  server?.closeAllConnections()
  server?.close()
  await otel.shutdown()
})

const named = (spans: ReadableSpan[], name: string) => {
  const found = spans.filter((s) => s.name === name)
  expect(found).toHaveLength(1)
  return found[0] as ReadableSpan
}

it("a caller that leaves mid-slice: instrumentation-express's request handler span ends after the slice, before the server span", async () => {
  const req = request(`${base}/cut`, { headers: { 'x-deadline-remaining-ms': '5000' } })
  req.on('error', () => {})
  req.end()
  await started
  req.destroy()
  const spans = await otel.spansWhere(
    (all) =>
      all.some((s) => s.name === 'GET /cut') && all.some((s) => s.name === 'deadline.slice work'),
  )
  const server = named(spans, 'GET /cut')
  const handler = named(spans, 'request handler')
  const slice = named(spans, 'deadline.slice work')
  expect(slice.parentSpanContext?.spanId).toBe(handler.spanContext().spanId)
  expect(server.attributes['hourglass.deadline.outcome']).toBe('client-closed')
  // The exporter has them in the order they ended (SimpleSpanProcessor).
  const order = spans.map((s) => s.name)
  expect(order.indexOf('deadline.slice work')).toBeLessThan(order.indexOf('request handler'))
  expect(order.indexOf('request handler')).toBeLessThan(order.indexOf('GET /cut'))
})
