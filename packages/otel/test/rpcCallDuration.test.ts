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
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { Histogram } from '@opentelemetry/sdk-metrics'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { grpcErrorType, rpcStatusAttributes } from '../src/rpcConventions.js'
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
/** Set by `start`; a test that starts nothing (the pure mapping one) has none to stop. */
let stop: StopInstrumentation | undefined
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
    stop?.()
    stop = undefined
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
  it('one sample per call on each side, in s, with the advised buckets, the stable method and status attributes whatever the opt-in (the spans keep the older ones), and error.type when the span is an error', async () => {
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
        'rpc.system.name': 'grpc',
        'rpc.method': 'shop.Quotes/Ask',
        // The server it was sent to, from the client's target (`127.0.0.1:<port>`).
        ...(kind === SpanKind.CLIENT ? { 'server.address': '127.0.0.1', 'server.port': port } : {}),
      }
      const found = await points(name)
      expect(
        found.map((p) => p.attributes).sort((a, b) => statusOf(a) - statusOf(b)),
        name,
      ).toEqual([
        { ...method, 'rpc.status_code': 'OK' },
        {
          ...method,
          'rpc.status_code': 'INVALID_ARGUMENT',
          ...(kind === SpanKind.CLIENT ? { 'error.type': 'INVALID_ARGUMENT' } : {}),
        },
        { ...method, 'rpc.status_code': 'UNAVAILABLE', 'error.type': 'UNAVAILABLE' },
      ])
      for (const p of found) {
        expect(p.value.count, name).toBe(1)
        expect(p.value.buckets.boundaries, name).toEqual([
          0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
        ])
        // The same duration as the call's span says (its elapsed_ms, rounded to 0.1 ms).
        const span = askSpans(spans).find(
          (s) => s.kind === kind && s.attributes['rpc.grpc.status_code'] === statusOf(p.attributes),
        )
        // The span keeps the older attributes (no opt-in), and the point's
        // error.type is its span's: there exactly when the span is an error.
        expect(span?.attributes['rpc.system'], name).toBe('grpc')
        expect(span?.attributes['error.type'], name).toBe(p.attributes['error.type'])
        expect(span?.status.code === SpanStatusCode.ERROR, name).toBe('error.type' in p.attributes)
        const elapsedMs = span?.attributes['hourglass.deadline.elapsed_ms'] as number
        expect(Math.abs((p.value.sum ?? Number.NaN) * 1000 - elapsedMs), name).toBeLessThanOrEqual(
          0.05,
        )
      }
    }
  })

  it.each(['rpc', 'rpc/dup'])(
    'under OTEL_SEMCONV_STABILITY_OPT_IN=%s, the same stable attributes, no older ones: rpc.system.name, the full rpc.method, rpc.status_code',
    async (optIn) => {
      const client = await start(optIn)
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
    },
  )

  it('a call refused unsent (no time left) has a client sample, DEADLINE_EXCEEDED and an error, as its span; no server sample (nothing reached it)', async () => {
    const client = await start(undefined)
    expect(await ask(client, status.OK, 0)).toBe(status.DEADLINE_EXCEEDED)
    const [refused] = await otel.spansWhere((all) => askSpans(all).length === 1)
    expect(refused?.attributes['hourglass.deadline.outcome']).toBe('refused')
    expect(refused?.attributes['error.type']).toBe('DEADLINE_EXCEEDED')
    const found = await points(CLIENT)
    // No server.address: no channel was asked for one (as on its span).
    expect(found.map((p) => p.attributes)).toEqual([
      {
        'rpc.system.name': 'grpc',
        'rpc.method': 'shop.Quotes/Ask',
        'rpc.status_code': 'DEADLINE_EXCEEDED',
        'error.type': 'DEADLINE_EXCEEDED',
      },
    ])
    expect(found[0]?.value.count).toBe(1)
    expect(await points(SERVER)).toEqual([])
  })

  it('a status code gRPC does not define (a handler error whose code is 11000) is UNKNOWN on the spans and the metrics: an error of the server, not a series of its own', async () => {
    const client = await start(undefined)
    // grpc-js hands the caller the code as it came (11000): Hourglass's telemetry reads it as gRPC says.
    expect(await ask(client, 11000)).toBe(11000)
    const spans = await otel.spansWhere((all) => askSpans(all).length === 2)
    for (const span of askSpans(spans)) {
      expect(span.attributes['rpc.grpc.status_code'], String(span.kind)).toBe(status.UNKNOWN)
      expect(span.attributes['error.type'], String(span.kind)).toBe('UNKNOWN')
    }
    for (const name of [CLIENT, SERVER]) {
      const [point] = await points(name)
      expect(point?.attributes['rpc.status_code'], name).toBe('UNKNOWN')
      expect(point?.attributes['error.type'], name).toBe('UNKNOWN')
    }
  })

  it('any code that is not one of gRPC’s 0–16 (negative, 17, fractional, NaN) reads as UNKNOWN in both conventions, an error on both sides', () => {
    const both = { old: true, stable: true }
    for (const code of [-1, 17, 11000, 2.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(rpcStatusAttributes(code, both), String(code)).toEqual({
        'rpc.grpc.status_code': status.UNKNOWN,
        'rpc.status_code': 'UNKNOWN',
      })
      expect(grpcErrorType(code, 'server'), String(code)).toBe('UNKNOWN')
      expect(grpcErrorType(code, 'client'), String(code)).toBe('UNKNOWN')
    }
    // gRPC's own codes stay as they are.
    expect(rpcStatusAttributes(status.UNAUTHENTICATED, both)).toEqual({
      'rpc.grpc.status_code': 16,
      'rpc.status_code': 'UNAUTHENTICATED',
    })
    expect(grpcErrorType(status.NOT_FOUND, 'server')).toBeUndefined()
  })
})

/** The status a point's `rpc.status_code` names, as a number (`UNAVAILABLE` → 14). */
function statusOf(attributes: Record<string, unknown>): number {
  return status[attributes['rpc.status_code'] as keyof typeof status]
}
