import { Deadline } from '@hourglass/core'
import { ROOT_CONTEXT, trace } from '@opentelemetry/api'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { expect, it } from 'vitest'
import { OpenWork } from '../src/OpenWork.js'

/**
 * A cut request's hold covers the span its open work was started under
 * (instrumentation-express's `request handler`), so it ends after them.
 * Only one of the request's own trace: a span the app keeps open around
 * many requests (a worker's lifetime), active where the work started, had
 * its `end()` taken and deferred up to 1 s by a request that was not its.
 */
const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const tracer = provider.getTracer('t')

it("holds the work's parent of the request's trace, not a span of another trace", () => {
  exporter.reset()
  const server = tracer.startSpan('GET /cut')
  const handler = tracer.startSpan('request handler', {}, trace.setSpan(ROOT_CONTEXT, server))
  const lifetime = tracer.startSpan('worker lifetime')
  const slice = tracer.startSpan('deadline.slice work', {}, trace.setSpan(ROOT_CONTEXT, handler))
  const egress = tracer.startSpan('deadline.egress GET', {}, trace.setSpan(ROOT_CONTEXT, lifetime))
  const openWork = new OpenWork()
  const owner = Deadline.after(10_000)
  openWork.own(owner)
  openWork.track(owner, slice, handler)
  openWork.track(owner, egress, lifetime)
  openWork.holdEnd(owner, server)
  server.end()
  handler.end()
  lifetime.end()
  // The app's span ends when the app ends it; the request's wait for their work.
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['worker lifetime'])
  slice.end()
  openWork.untrack(slice)
  egress.end()
  openWork.untrack(egress)
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([
    'worker lifetime',
    'deadline.slice work',
    'deadline.egress GET',
    'request handler',
    'GET /cut',
  ])
  owner.dispose()
})
