import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type CallOptions,
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
} from '@grpc/grpc-js'
import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { currentDeadline, Deadline, runWithDeadline } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { deadlineInterceptor, deadlineServerInterceptor, withCallDeadline } from '@hourglass/grpc'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, propagation, SpanKind, trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useBullmqQueues } from './helpers/bullmqQueues.js'
import { jsonUnary } from './helpers/jsonUnary.js'
import { setupOtel } from './helpers/otel.js'

// Without DeadlineContextManager, work a gRPC handler or a job's processor
// starts under a deadline of its own — `withCallDeadline(Deadline.after(…))`,
// a fetch's `{ deadline }`, a job added with its own (as the bullmq README
// advises for jobs that outlive their caller) — is still that handler's
// work: its span joins the call's or the job's trace, as the same work under
// `currentDeadline()` does, and its retries are events on that span. Before,
// only the explicit deadline's ancestors were searched, so each got no
// parent and a trace of its own, and its retry events were dropped.

const service = { ask: jsonUnary('/shop.Quotes/Ask') }
interface QuotesClient {
  ask(
    request: unknown,
    metadata: Metadata,
    options: CallOptions,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): unknown
  close(): void
}
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')
type Handler = (
  call: { request: unknown },
  callback: (error: Partial<ServiceError> | null, value?: unknown) => void,
) => void

const bull = useBullmqQueues('otelown')
let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const closers: Array<() => unknown> = []

beforeEach(() => {
  otel = setupOtel()
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
})
afterEach(async () => {
  try {
    await bull.closeAll()
    for (const close of closers.splice(0).reverse()) await close()
  } finally {
    stop()
    await otel.shutdown()
  }
})

async function grpcServer(ask: Handler): Promise<QuotesClient> {
  const server = new Server({ interceptors: [deadlineServerInterceptor()] })
  server.addService(service, { ask })
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  )
  const client = new QuotesClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  }) as unknown as QuotesClient
  closers.push(
    () => server.forceShutdown(),
    () => client.close(),
  )
  return client
}

function call(client: QuotesClient, request: unknown, options: CallOptions = {}): Promise<unknown> {
  return new Promise((resolve, reject) => {
    client.ask(request, new Metadata(), options, (error, value) =>
      error ? reject(error) : resolve(value),
    )
  })
}

/** An upstream that answers 503 to the first request, then `ok`. */
async function flakyUpstream(): Promise<string> {
  let requests = 0
  const server: HttpServer = createServer((_req, res) => {
    res.statusCode = ++requests === 1 ? 503 : 200
    res.end('ok')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/price`
}

const serverSpans = (spans: ReadableSpan[]) => spans.filter((s) => s.kind === SpanKind.SERVER)

describe('work given a deadline of its own inside a gRPC handler joins the call’s trace', () => {
  it('a fetch with its own deadline: its attempt spans are children of the call’s server span, and its retry is an event there', async () => {
    const url = await flakyUpstream()
    const fetch = createFetch()
    closers.push(() => fetch.close())
    const client = await grpcServer((_call, callback) => {
      fetch(url, { deadline: Deadline.after(5_000), retry: { statuses: [503] } })
        .then((res) => res.text())
        .then((body) => callback(null, { body }), callback)
    })
    await runWithDeadline(Deadline.after(5_000), () => call(client, {}))
    const spans = await otel.spansWhere(
      (all) =>
        serverSpans(all).length === 1 &&
        all.filter((s) => s.name === 'deadline.egress GET').length === 2,
    )
    const [server] = serverSpans(spans)
    for (const attempt of spans.filter((s) => s.name === 'deadline.egress GET')) {
      expect(attempt.spanContext().traceId).toBe(server!.spanContext().traceId)
      expect(attempt.parentSpanContext?.spanId).toBe(server!.spanContext().spanId)
    }
    expect(
      server!.events.map((e) => [e.name, e.attributes?.['hourglass.deadline.retry.reason']]),
    ).toEqual([['hourglass.deadline.retry', 'HTTP_503']])
  })

  it('a gRPC call with withCallDeadline(Deadline.after(…)): its client span is a child of the call’s server span', async () => {
    let inner: QuotesClient | undefined
    const client = await grpcServer((request, callback) => {
      if ((request.request as { inner?: boolean }).inner) return callback(null, {})
      call(inner!, { inner: true }, withCallDeadline(Deadline.after(5_000))).then(
        () => callback(null, {}),
        callback,
      )
    })
    inner = client
    const outer = otel.tracer.startSpan('caller')
    await context.with(trace.setSpan(context.active(), outer), () =>
      runWithDeadline(Deadline.after(5_000), () => call(client, {})),
    )
    outer.end()
    const spans = await otel.spansWhere(
      (all) =>
        serverSpans(all).length === 2 && all.filter((s) => s.kind === SpanKind.CLIENT).length === 2,
    )
    const parentOf = (span: ReadableSpan | undefined) => span?.parentSpanContext?.spanId
    const clients = spans.filter((s) => s.kind === SpanKind.CLIENT)
    const outerClient = clients.find((s) => parentOf(s) === outer.spanContext().spanId)
    const outerServer = serverSpans(spans).find(
      (s) => parentOf(s) === outerClient?.spanContext().spanId,
    )
    const innerClient = clients.find((s) => s !== outerClient)
    expect(outerServer).toBeDefined()
    // Every span of the exchange is in the caller's trace…
    for (const span of spans) expect(span.spanContext().traceId).toBe(outer.spanContext().traceId)
    // …and the handler's own call is a child of the call it was made in.
    expect(parentOf(innerClient)).toBe(outerServer!.spanContext().spanId)
  })
})

describe.skipIf(!bull.available)(
  'a job added with a deadline of its own inside a processor joins the job’s trace',
  () => {
    it('its span is a child of the adding job’s span, as a job added under currentDeadline() is', async () => {
      const { queue: q, events, name } = await bull.queue()
      bull.worker(
        name,
        withDeadline(async (job) => {
          if (job.name !== 'parent') return 'child done'
          await addWithDeadline(q, 'under-current', {})
          await addWithDeadline(q, 'own', {}, { deadline: Deadline.after(60_000) })
          return currentDeadline() ? 'parent done' : 'no deadline'
        }),
      )
      const parent = await addWithDeadline(q, 'parent', {}, { deadline: Deadline.after(10_000) })
      expect(await parent.waitUntilFinished(events)).toBe('parent done')
      const spans = await otel.spansWhere(
        (all) => all.filter((s) => s.name === `process ${name}`).length === 3,
      )
      const byJob = (jobName: string) =>
        spans.find((s) => s.attributes['bullmq.job.name'] === jobName) as ReadableSpan
      const parentSpan = byJob('parent')
      for (const child of [byJob('under-current'), byJob('own')]) {
        expect(child.spanContext().traceId).toBe(parentSpan.spanContext().traceId)
        expect(child.parentSpanContext?.spanId).toBe(parentSpan.spanContext().spanId)
      }
    })
  },
)
