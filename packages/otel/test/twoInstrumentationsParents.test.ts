import {
  credentials,
  type Metadata,
  Metadata as MetadataClass,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
} from '@grpc/grpc-js'
import { currentDeadline, Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { deadlineServerInterceptor } from '@hourglass/grpc'
import {
  DeadlineContextManager,
  instrumentDeadlines,
  type StopInstrumentation,
} from '@hourglass/otel'
import { context, diag, propagation, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { DeadlineSpans } from '../src/deadlineSpans.js'
import { jsonUnary } from './helpers/jsonUnary.js'
import { setupOtel } from './helpers/otel.js'

/**
 * Two instrumentations enabled at once, each on a provider of its own (a
 * test harness's beside the SDK's): each records everything, and each
 * span's parent is one that provider has. A slice in a gRPC handler (no
 * OpenTelemetry context there) finds its parent through the call's
 * deadline: that was the call span of whichever instrumentation heard the
 * call last, so the other provider's slice pointed at a span it never had.
 */

const service = { ask: jsonUnary('/shop.Quotes/Ask') }
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')
interface QuotesClient {
  ask(
    request: unknown,
    metadata: Metadata,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): unknown
  close(): void
}

let otel: ReturnType<typeof setupOtel>
const stops: StopInstrumentation[] = []
const closers: Array<() => void> = []

beforeEach(() => {
  otel = setupOtel()
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  diag.disable()
})
afterEach(async () => {
  for (const close of closers.splice(0)) close()
  for (const stop of stops.splice(0)) stop()
  await otel.shutdown()
})

/** A gRPC call whose handler runs a slice, heard by two instrumentations on two providers. */
async function sliceParentsInBothProviders(): Promise<void> {
  const second = new InMemorySpanExporter()
  const secondProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(second)],
  })
  stops.push(instrumentDeadlines({ tracerProvider: otel.tracerProvider }))
  stops.push(instrumentDeadlines({ tracerProvider: secondProvider }))

  const server = new Server({ interceptors: [deadlineServerInterceptor()] })
  server.addService(service, {
    ask: (
      _call: unknown,
      callback: (error: Partial<ServiceError> | null, value?: unknown) => void,
    ) => {
      const deadline = currentDeadline()
      deadline
        ?.plan({ lookup: 1 }, { reserveMs: 0 })
        .run('lookup', () => 42)
        .then((price) => callback(null, { price }))
    },
  })
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  )
  const client = new QuotesClient(
    `127.0.0.1:${port}`,
    credentials.createInsecure(),
  ) as unknown as QuotesClient
  closers.push(
    () => client.close(),
    () => server.forceShutdown(),
  )
  const metadata = new MetadataClass()
  metadata.set('grpc-timeout', '2S')
  await new Promise((resolve) => client.ask({}, metadata, (e, v) => resolve(e ?? v)))
  const first = await otel.spansWhere((s) => s.some((x) => x.name === 'shop.Quotes/Ask'))
  await expect
    .poll(() => second.getFinishedSpans().some((x) => x.name === 'shop.Quotes/Ask'))
    .toBe(true)
  for (const spans of [first, second.getFinishedSpans()]) {
    const call = spans.find((s) => s.name === 'shop.Quotes/Ask')
    const slice = spans.find((s) => s.name === 'deadline.slice lookup')
    expect(slice?.parentSpanContext?.spanId).toBe(call?.spanContext().spanId)
  }
  await secondProvider.shutdown()
}

it('a slice in a gRPC handler: in each provider, a child of that provider’s server span', async () => {
  await sliceParentsInBothProviders()
})

/**
 * The README's setup for gRPC and BullMQ: DeadlineContextManager makes the
 * call's span active in the handler — the span of whichever instrumentation
 * heard the call last. Taken as an active span of the app's, it was the
 * first instrumentation's slice parent too: a span its provider never had.
 */
it('the same with DeadlineContextManager as the global context manager', async () => {
  context.disable()
  context.setGlobalContextManager(
    new DeadlineContextManager(new AsyncLocalStorageContextManager()).enable(),
  )
  await sliceParentsInBothProviders()
})

/**
 * The span DeadlineContextManager lends is looked up again only while it is
 * still the current deadline's: a context the app captured in one call's
 * handler and restores on purpose in another's (`context.with(saved, …)`, a
 * callback bound to where it was made) keeps its span. Every context the
 * manager returned was taken for a lent one, so the restored call's span was
 * swapped for the current call's: work meant for call A went into call B's
 * trace.
 */
it('a context the app restores under another deadline keeps the span it had', () => {
  context.disable()
  context.setGlobalContextManager(
    new DeadlineContextManager(new AsyncLocalStorageContextManager()).enable(),
  )
  const clock = new ManualClock()
  const a = Deadline.after(1000, { clock })
  const b = Deadline.after(1000, { clock })
  const tracer = otel.tracerProvider.getTracer('test')
  const spanA = tracer.startSpan('call A')
  const spanB = tracer.startSpan('call B')
  const spans = new DeadlineSpans()
  spans.set(a, spanA)
  spans.set(b, spanB)

  const savedInA = runWithDeadline(a, () => context.active())
  expect(trace.getSpan(savedInA)).toBe(spanA)
  expect(runWithDeadline(b, () => trace.getActiveSpan())).toBe(spanB)
  expect(runWithDeadline(b, () => context.with(savedInA, () => trace.getActiveSpan()))).toBe(spanA)
  // Restored under its own call's deadline it is still that call's span.
  expect(runWithDeadline(a, () => context.with(savedInA, () => trace.getActiveSpan()))).toBe(spanA)
  // And this instrumentation's own parent for work there is the restored span too.
  expect(runWithDeadline(b, () => trace.getSpan(spans.parentContext(undefined, savedInA)))).toBe(
    spanA,
  )
  spanA.end()
  spanB.end()
  a.dispose()
  b.dispose()
})
