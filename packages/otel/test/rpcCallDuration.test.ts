import {
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import { Deadline, runWithDeadline } from '@hourglass/core'
import { deadlineInterceptor, deadlineServerInterceptor } from '@hourglass/grpc'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { SpanKind } from '@opentelemetry/api'
import type { Histogram } from '@opentelemetry/sdk-metrics'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { jsonUnary } from './helpers/jsonUnary.js'
import { setupOtel } from './helpers/otel.js'

// The RPC conventions' call durations for @hourglass/grpc's calls: real
// grpc-js over loopback HTTP/2, both interceptors, the real SDK's
// MeterProvider read with a pull reader. Dashboards built on the
// conventions (latency and error rate by method) found no gRPC series at all.

const service = { ask: jsonUnary('/shop.Quotes/Ask') }
interface QuotesClient {
  ask(
    request: unknown,
    metadata: Metadata,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): unknown
  close(): void
}
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')

const CLIENT = 'rpc.client.call.duration'
const SERVER = 'rpc.server.call.duration'

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
/** The port the server listens on, on 127.0.0.1 (set by `start`). */
let port = 0
const closers: Array<() => void> = []
const optInBefore = process.env.OTEL_SEMCONV_STABILITY_OPT_IN

beforeEach(() => {
  otel = setupOtel()
})
afterEach(async () => {
  try {
    for (const close of closers.splice(0)) close()
  } finally {
    if (optInBefore === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN
    else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = optInBefore
    stop()
    await otel.shutdown()
  }
})

/** Instruments with the opt-in set to `optIn` (read at enable), starts a server answering by the request's `code`. */
async function start(optIn: string | undefined): Promise<QuotesClient> {
  if (optIn === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN
  else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = optIn
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  const server = new Server({ interceptors: [deadlineServerInterceptor()] })
  server.addService(service, {
    ask(
      call: { request: { code: number } },
      callback: (error: Partial<ServiceError> | null, value?: unknown) => void,
    ) {
      const { code } = call.request
      if (code === status.OK) callback(null, { price: 42 })
      else callback({ code, details: 'no' })
    },
  })
  port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
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

/** One call answered with `code`, under a deadline of `budgetMs`; resolves with the status the caller got. */
function ask(client: QuotesClient, code: number, budgetMs = 5000): Promise<number> {
  return runWithDeadline(
    Deadline.after(budgetMs),
    () =>
      new Promise((resolve) =>
        client.ask({ code }, new Metadata(), (error) => resolve(error ? error.code : status.OK)),
      ),
  )
}

const askSpans = (spans: ReadableSpan[]) => spans.filter((s) => s.name === 'shop.Quotes/Ask')

type Point = { attributes: Record<string, unknown>; value: Histogram }
const points = async (name: string) => (await otel.points(name)) as unknown as Point[]

describe('rpc.client.call.duration and rpc.server.call.duration', () => {
  it('one sample per call on each side, in s, with the advised buckets, the method and status as on its span, and error.type when the span is an error', async () => {
    const client = await start(undefined)
    expect(await ask(client, status.OK)).toBe(status.OK)
    // A server failure: an error on both sides.
    expect(await ask(client, status.UNAVAILABLE)).toBe(status.UNAVAILABLE)
    // The caller's mistake: an error to the client, not to the server.
    expect(await ask(client, status.INVALID_ARGUMENT)).toBe(status.INVALID_ARGUMENT)
    const spans = await otel.spansWhere((all) => askSpans(all).length === 6)

    expect(await otel.unit(CLIENT)).toBe('s')
    expect(await otel.unit(SERVER)).toBe('s')
    for (const [name, kind] of [
      [CLIENT, SpanKind.CLIENT],
      [SERVER, SpanKind.SERVER],
    ] as const) {
      const method = {
        'rpc.system': 'grpc',
        'rpc.service': 'shop.Quotes',
        'rpc.method': 'Ask',
        // The server it was sent to, from the client's target (`127.0.0.1:<port>`).
        ...(kind === SpanKind.CLIENT ? { 'server.address': '127.0.0.1', 'server.port': port } : {}),
      }
      const found = await points(name)
      expect(
        found
          .map((p) => p.attributes)
          .sort((a, b) => Number(a['rpc.grpc.status_code']) - Number(b['rpc.grpc.status_code'])),
        name,
      ).toEqual([
        { ...method, 'rpc.grpc.status_code': status.OK },
        {
          ...method,
          'rpc.grpc.status_code': status.INVALID_ARGUMENT,
          ...(kind === SpanKind.CLIENT ? { 'error.type': 'INVALID_ARGUMENT' } : {}),
        },
        { ...method, 'rpc.grpc.status_code': status.UNAVAILABLE, 'error.type': 'UNAVAILABLE' },
      ])
      for (const p of found) {
        expect(p.value.count, name).toBe(1)
        expect(p.value.buckets.boundaries, name).toEqual([
          0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
        ])
        // The same duration as the call's span says (its elapsed_ms, rounded to 0.1 ms).
        const span = askSpans(spans).find(
          (s) =>
            s.kind === kind &&
            s.attributes['rpc.grpc.status_code'] === p.attributes['rpc.grpc.status_code'],
        )
        const elapsedMs = span?.attributes['hourglass.deadline.elapsed_ms'] as number
        expect(Math.abs((p.value.sum ?? Number.NaN) * 1000 - elapsedMs), name).toBeLessThanOrEqual(
          0.05,
        )
      }
    }
  })

  it('under OTEL_SEMCONV_STABILITY_OPT_IN=rpc, the stable attributes: rpc.system.name, the full rpc.method, rpc.status_code', async () => {
    const client = await start('rpc')
    expect(await ask(client, status.UNAVAILABLE)).toBe(status.UNAVAILABLE)
    await otel.spansWhere((all) => askSpans(all).length === 2)
    for (const name of [CLIENT, SERVER]) {
      expect(
        (await points(name)).map((p) => p.attributes),
        name,
      ).toEqual([
        {
          ...(name === CLIENT ? { 'server.address': '127.0.0.1', 'server.port': port } : {}),
          'rpc.system.name': 'grpc',
          'rpc.method': 'shop.Quotes/Ask',
          'rpc.status_code': 'UNAVAILABLE',
          'error.type': 'UNAVAILABLE',
        },
      ])
    }
  })

  it('a call refused unsent (no time left) has no client sample: no RPC went out; its span still says so', async () => {
    const client = await start(undefined)
    expect(await ask(client, status.OK, 0)).toBe(status.DEADLINE_EXCEEDED)
    const [refused] = await otel.spansWhere((all) => askSpans(all).length === 1)
    expect(refused?.attributes['hourglass.deadline.outcome']).toBe('refused')
    expect(await points(CLIENT)).toEqual([])
    expect(await points(SERVER)).toEqual([])
  })
})
