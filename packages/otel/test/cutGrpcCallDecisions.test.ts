import {
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
} from '@grpc/grpc-js'
import { Deadline, runWithDeadline } from '@hourglass/core'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import { deadlineInterceptor, deadlineServerInterceptor } from '@hourglass/grpc'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { faultServer } from '@hourglass/testkit'
import { SpanKind } from '@opentelemetry/api'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { jsonUnary } from './helpers/jsonUnary.js'
import { setupOtel } from './helpers/otel.js'

/**
 * A gRPC call its deadline ends while its handler's outbound call runs: the
 * call's server span (this package's own) ended at `server-end`, and fetch's
 * `retry_skipped` for the attempt the deadline ended (`no-budget`) comes a
 * few microtasks later, in the same turn: it was missing from the span,
 * though `hourglass.deadline.retries` counts it, and the span's `retry`
 * event stood alone.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const cleanups: Array<() => unknown> = []

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await otel.shutdown()
})

const service = { ask: jsonUnary('/shop.Quotes/Ask') }
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')

it('the retry the deadline gave up on is on the gRPC server span, as in the retries count', async () => {
  // A 503 (retried), then no answer: the call's deadline ends the second attempt.
  const upstream = await faultServer((_req, i) =>
    i === 0 ? { type: 'respond', status: 503, body: 'busy' } : { type: 'hang' },
  )
  cleanups.push(() => upstream.close())
  const fetch: HourglassFetch = createFetch({ retry: { statuses: [503] } })
  cleanups.push(() => fetch.close())
  const server = new Server({ interceptors: [deadlineServerInterceptor({ reserveMs: 10 })] })
  server.addService(service, {
    ask: (
      _call: unknown,
      callback: (error: Partial<ServiceError> | null, value?: unknown) => void,
    ) => {
      fetch(`${upstream.url}/price`).then(
        (answer) => callback(null, { status: answer.status }),
        (error: Error) => callback(error),
      )
    },
  })
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  )
  cleanups.push(() => server.forceShutdown())
  const client = new QuotesClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  }) as unknown as {
    ask(r: unknown, m: Metadata, cb: (error: ServiceError | null) => void): void
    close(): void
  }
  cleanups.push(() => client.close())

  await runWithDeadline(
    Deadline.after(500),
    () => new Promise<void>((resolve) => client.ask({}, new Metadata(), () => resolve())),
  )
  const spans = await otel.spansWhere((all) =>
    all.some((s) => s.kind === SpanKind.SERVER && s.name === 'shop.Quotes/Ask'),
  )
  const call = spans.find((s) => s.kind === SpanKind.SERVER) as (typeof spans)[number]
  expect(call.attributes['hourglass.deadline.outcome']).toBe('expired')
  const events = (name: string) =>
    call.events.filter((e) => e.name === name).map((e) => e.attributes)
  expect(events('hourglass.deadline.retry')).toHaveLength(1)
  expect(events('hourglass.deadline.retry_skipped')).toEqual([
    {
      'hourglass.deadline.attempt': 2,
      'hourglass.deadline.retry.reason': 'DEADLINE_EXCEEDED',
      'hourglass.deadline.retry.why': 'no-budget',
    },
  ])
  expect(
    await otel.counter('hourglass.deadline.retries', {
      'hourglass.deadline.retry.outcome': 'skipped',
      'hourglass.deadline.retry.why': 'no-budget',
    }),
  ).toBe(1)
})
