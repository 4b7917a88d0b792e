import { once } from 'node:events'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { deadline } from '@hourglass/express'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, diag, SpanKind, trace } from '@opentelemetry/api'
import { RPCType, setRPCMetadata } from '@opentelemetry/core'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import express from 'express'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * Two instrumentations enabled at once (the SDK's and a test harness's, each
 * on a provider of its own) and a request cut short while its slice runs:
 * each holds the request's server span until its own slice span has ended
 * (`OpenWork.holdEnd`). Released in the order they subscribed, the first put
 * the span's own `end()` back over the second's hold, and the second put back
 * the first's, already spent: the server span was never ended, so neither
 * provider ever exported it.
 */

let otel: ReturnType<typeof setupOtel>
const stops: StopInstrumentation[] = []
let server: Server | undefined

beforeEach(() => {
  otel = setupOtel()
  diag.disable()
})
afterEach(async () => {
  for (const stop of stops.splice(0)) stop()
  server?.closeAllConnections()
  server?.close()
  await otel.shutdown()
})

it('a request whose client left mid-slice: its server span ends, once', async () => {
  const second = new InMemorySpanExporter()
  const secondProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(second)],
  })
  stops.push(instrumentDeadlines({ tracerProvider: otel.tracerProvider }))
  stops.push(instrumentDeadlines({ tracerProvider: secondProvider }))

  let sliceStarted: () => void = () => {}
  const started = new Promise<void>((resolve) => {
    sliceStarted = resolve
  })
  const app = express()
  app.use(deadline({ plan: { work: 1 } }))
  app.get('/cut', (req, res) => {
    // The slice ends a tick after the cancellation, as cancelled work does.
    req.plan
      ?.run(
        'work',
        (signal) =>
          new Promise<void>((resolve) => {
            signal.addEventListener('abort', () => setImmediate(resolve), { once: true })
            sliceStarted()
          }),
      )
      .then(
        () => res.end(),
        () => {},
      )
  })
  // A server span of the test's own, set as the request's RPC metadata as
  // instrumentation-http does (the README's snippet), ended on 'close' after
  // @hourglass/express has heard it.
  server = createServer((req, res) => {
    const span = otel.tracer.startSpan('server', { kind: SpanKind.SERVER })
    const ctx = setRPCMetadata(trace.setSpan(context.active(), span), {
      type: RPCType.HTTP,
      span,
    })
    context.with(ctx, () => app(req, res))
    res.on('close', () => span.end())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo

  const req = request({ port, host: '127.0.0.1', path: '/cut' })
  req.on('error', () => {})
  req.end()
  await started
  req.destroy()

  const spans = await otel.spansWhere((all) => all.some((s) => s.name === 'server'))
  const servers = spans.filter((s) => s.name === 'server')
  expect(servers).toHaveLength(1)
  expect(servers[0]?.attributes['hourglass.deadline.outcome']).toBe('client-closed')
  // Ended after the slice spans of both instrumentations, not before.
  const slices = [...spans, ...second.getFinishedSpans()].filter(
    (s) => s.name === 'deadline.slice work',
  )
  expect(slices).toHaveLength(2)
})
