import {
  credentials,
  type Metadata,
  Metadata as MetadataClass,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import {
  deadlineInterceptor,
  deadlineServerInterceptor,
  type ServerDeadlineOptions,
} from '@hourglass/grpc'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type Context, context, propagation, SpanKind, trace } from '@opentelemetry/api'
import { suppressTracing, W3CTraceContextPropagator } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { jsonUnary } from './helpers/jsonUnary.js'
import { setupOtel } from './helpers/otel.js'

// OpenTelemetry's tracing suppression (`suppressTracing` of
// @opentelemetry/core): no span, and no span event, is recorded for work
// done in a suppressed context — an exporter's own calls, a server its owner
// chose not to trace. Real grpc-js over loopback HTTP/2 with
// @hourglass/grpc's interceptors; each case beside the same without
// suppression, which is recorded.
//
// This file shares its process with other files (the `parallel` project): each
// test stops the instrumentation and the providers it started, even when an
// assertion failed first, and passes its tracer provider rather than setting
// the global one.

const service = { ask: jsonUnary('/shop.Quotes/Ask') }
type Handler = (
  call: { request: unknown; metadata: Metadata },
  callback: (error: Partial<ServiceError> | null, value?: unknown) => void,
) => void
interface QuotesClient {
  ask(
    request: unknown,
    metadata: Metadata,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): { cancel(): void }
  close(): void
}
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const closers: Array<() => void> = []

beforeEach(() => {
  otel = setupOtel()
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
})
afterEach(async () => {
  try {
    for (const close of closers.splice(0)) close()
  } finally {
    // Even if a close throws: the subscriptions and providers must not outlive the file.
    stop()
    await otel.shutdown()
  }
})

/** A server bound in context `bindIn` (its calls run in it), and a client of it. */
async function start(
  ask: Handler,
  bindIn: Context = context.active(),
  options: ServerDeadlineOptions = {},
): Promise<QuotesClient> {
  const server = new Server({ interceptors: [deadlineServerInterceptor(options)] })
  server.addService(service, { ask })
  const port = await context.with(
    bindIn,
    () =>
      new Promise<number>((resolve, reject) =>
        server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
          error ? reject(error) : resolve(bound),
        ),
      ),
  )
  const client = new QuotesClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  }) as unknown as QuotesClient
  closers.push(
    () => client.close(),
    () => server.forceShutdown(),
  )
  return client
}

function ask(
  client: QuotesClient,
  metadata: Metadata = new MetadataClass(),
): Promise<{ error?: ServiceError; value?: unknown }> {
  return new Promise((resolve) => {
    client.ask({}, metadata, (error, value) => resolve(error ? { error } : { value }))
  })
}

const suppressed = () => suppressTracing(context.active())

const answers: Handler = (_call, callback) => callback(null, {})

const calls = (spans: ReadableSpan[], kind: SpanKind) =>
  spans.filter((s) => s.kind === kind && s.name === 'shop.Quotes/Ask')

describe('instrumentDeadlines: gRPC under suppressed tracing', () => {
  it('a server bound with tracing suppressed records no SERVER span for its calls; one bound without does', async () => {
    // grpc-js reads a call's metadata, where @hourglass/grpc gives it its
    // deadline, in the context the server was bound in (it loses it before
    // the handler runs).
    const quiet = await start(answers, suppressed())
    const traced = await start(answers)

    // The caller does not suppress: its CLIENT span is recorded, and its
    // traceparent reaches the server, whose span would be that span's child.
    expect((await ask(quiet)).value).toEqual({})
    await otel.spansWhere((all) => calls(all, SpanKind.CLIENT).length === 1)
    expect((await ask(traced)).value).toEqual({})
    // The second call's server span, child of its client span: by then the
    // first call is long over, and its server span, had it one, has ended.
    const spans = await otel.spansWhere((all) => {
      const outbound = calls(all, SpanKind.CLIENT)[1]
      return calls(all, SpanKind.SERVER).some(
        (s) => outbound && s.parentSpanContext?.spanId === outbound.spanContext().spanId,
      )
    })
    expect(calls(spans, SpanKind.CLIENT)).toHaveLength(2)
    expect(calls(spans, SpanKind.SERVER)).toHaveLength(1)
  })

  it('a malformed deadline header sent to a server bound with tracing suppressed is no event anywhere', async () => {
    const quiet = await start(answers, suppressed())
    const metadata = new MetadataClass()
    metadata.set('x-deadline-remaining-ms', 'soon')
    expect((await ask(quiet, metadata)).value).toEqual({})
    const spans = await otel.spansWhere((all) => calls(all, SpanKind.CLIENT).length === 1)
    expect(calls(spans, SpanKind.SERVER)).toEqual([])
    expect(spans.flatMap((s) => s.events.map((e) => e.name))).not.toContain(
      'hourglass.deadline.invalid_header',
    )
  })

  it('a call made with tracing suppressed records no CLIENT span and sends no traceparent; the same call without suppression does', async () => {
    const seen: Array<string | undefined> = []
    const client = await start((call, callback) => {
      seen.push(call.metadata.get('traceparent')[0] as string | undefined)
      callback(null, {})
    })
    const caller = otel.tracer.startSpan('export', { kind: SpanKind.INTERNAL })
    const inCaller = trace.setSpan(context.active(), caller)
    await context.with(suppressTracing(inCaller), () =>
      runWithDeadline(Deadline.after(5000), () => ask(client)),
    )
    await context.with(inCaller, () => runWithDeadline(Deadline.after(5000), () => ask(client)))
    caller.end()
    const spans = await otel.spansWhere(
      (all) => calls(all, SpanKind.CLIENT).length > 0 && calls(all, SpanKind.SERVER).length === 2,
    )

    const outbound = calls(spans, SpanKind.CLIENT)
    expect(outbound).toHaveLength(1)
    expect(outbound[0]!.parentSpanContext?.spanId).toBe(caller.spanContext().spanId)
    expect(seen[0]).toBeUndefined()
    expect(seen[1]).toContain(outbound[0]!.spanContext().spanId)
  })

  it('a late write made with tracing suppressed is no event on the span active then; made without, it is', async () => {
    // The handler keeps its answer until the call has run out (the client
    // hears DEADLINE_EXCEEDED), then writes it late in the context given.
    // The server's 50 ms run on a clock of the test's, moved once the
    // handler holds the answer. On the real clock they were 50 ms less the
    // adaptive reserve (10–100 ms, from this process's timer lateness, which
    // a loaded box raises): at 50 or more the call expired on arrival, and a
    // stall between its metadata and its message did the same; either way
    // the client heard DEADLINE_EXCEEDED before the handler had run, with no
    // answer held to write late (a run in a shared worker failed so:
    // "held.shift(...) is not a function"). On a ManualClock the reserve is
    // its 10 ms floor.
    const clock = new ManualClock()
    const held: Array<(error: null, value: unknown) => void> = []
    let handled = () => {}
    const client = await start(
      (_call, callback) => {
        held.push(callback)
        handled()
      },
      context.active(),
      { maxMs: 50, clock },
    )
    const lateIn = async (ctx: Context) => {
      const inHandler = new Promise<void>((resolve) => {
        handled = resolve
      })
      const answer = ask(client)
      await inHandler
      // Past the server's 50 ms (less its reserve): its deadline answers.
      clock.advance(50)
      expect((await answer).error?.code).toBe(status.DEADLINE_EXCEEDED)
      context.with(ctx, () => held.shift()!(null, {}))
    }
    // Where the late answers are written: a span still open, as a `boot`
    // span around a server's start is.
    const quiet = otel.tracer.startSpan('quiet')
    const loud = otel.tracer.startSpan('loud')
    await lateIn(suppressTracing(trace.setSpan(context.active(), quiet)))
    await lateIn(trace.setSpan(context.active(), loud))
    quiet.end()
    loud.end()

    const spans = await otel.spansWhere((all) => all.some((s) => s.name === 'loud'))
    const eventsOf = (name: string) =>
      spans.filter((s) => s.name === name).flatMap((s) => s.events.map((e) => e.name))
    expect(eventsOf('loud')).toEqual(['hourglass.deadline.late_write'])
    expect(eventsOf('quiet')).toEqual([])
  })
})
