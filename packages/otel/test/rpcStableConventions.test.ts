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
import { propagation, SpanKind } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

// RPC semconv 1.45 (stable): an instrumentation that emitted the older RPC
// attributes keeps them by default and SHOULD emit the stable ones under
// OTEL_SEMCONV_STABILITY_OPT_IN=rpc (only those) or rpc/dup (both).

const json = {
  serialize: (value: unknown) => Buffer.from(JSON.stringify(value ?? null)),
  deserialize: (bytes: Buffer) => JSON.parse(bytes.toString('utf8')) as unknown,
}
const service = {
  ask: {
    path: '/shop.Quotes/Ask',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
}
interface QuotesClient {
  ask(
    request: unknown,
    metadata: Metadata,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): unknown
  close(): void
}
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')

const before = process.env.OTEL_SEMCONV_STABILITY_OPT_IN
const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  if (before === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN
  else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = before
})

/** One call answered UNAVAILABLE by the server, seen with the opt-in set to `optIn`. */
async function spansOfOneCall(optIn: string | undefined): Promise<ReadableSpan[]> {
  if (optIn === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN
  else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = optIn
  const otel = setupOtel()
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  const stop: StopInstrumentation = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
  cleanups.push(() => otel.shutdown(), stop)
  const server = new Server({ interceptors: [deadlineServerInterceptor({ reserveMs: 10 })] })
  server.addService(service, {
    ask: (_call: unknown, callback: (error: Partial<ServiceError>) => void) =>
      callback({ code: status.UNAVAILABLE, details: 'down for maintenance' }),
  })
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  )
  const client = new QuotesClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  }) as unknown as QuotesClient
  cleanups.push(
    () => server.forceShutdown(),
    () => client.close(),
  )
  const error = await runWithDeadline(
    Deadline.after(5000),
    () =>
      new Promise<ServiceError | null>((resolve) =>
        client.ask({}, new Metadata(), (e) => resolve(e)),
      ),
  )
  expect(error?.code).toBe(status.UNAVAILABLE)
  return otel.spansWhere((spans) => spans.filter((s) => s.name === 'shop.Quotes/Ask').length === 2)
}

const of = (spans: ReadableSpan[], kind: SpanKind) =>
  spans.find((s) => s.kind === kind && s.name === 'shop.Quotes/Ask')!.attributes

describe('gRPC spans follow OTEL_SEMCONV_STABILITY_OPT_IN for the RPC conventions', () => {
  it('unset: the older attributes, as before (rpc.system, rpc.service, a short rpc.method, the numeric rpc.grpc.status_code)', async () => {
    const spans = await spansOfOneCall(undefined)
    for (const kind of [SpanKind.CLIENT, SpanKind.SERVER]) {
      const attributes = of(spans, kind)
      expect(attributes).toMatchObject({
        'rpc.system': 'grpc',
        'rpc.service': 'shop.Quotes',
        'rpc.method': 'Ask',
        'rpc.grpc.status_code': status.UNAVAILABLE,
      })
      expect(attributes['rpc.system.name']).toBeUndefined()
      expect(attributes['rpc.status_code']).toBeUndefined()
    }
  })

  it('rpc: only the stable ones — rpc.system.name, the fully-qualified rpc.method, the status name in rpc.status_code', async () => {
    const spans = await spansOfOneCall('http, rpc')
    for (const kind of [SpanKind.CLIENT, SpanKind.SERVER]) {
      const attributes = of(spans, kind)
      expect(attributes).toMatchObject({
        'rpc.system.name': 'grpc',
        'rpc.method': 'shop.Quotes/Ask',
        'rpc.status_code': 'UNAVAILABLE',
        'error.type': 'UNAVAILABLE',
      })
      expect(attributes['rpc.system']).toBeUndefined()
      expect(attributes['rpc.service']).toBeUndefined()
      expect(attributes['rpc.grpc.status_code']).toBeUndefined()
    }
  })

  it('rpc/dup (over rpc): both, with rpc.method fully qualified as the stable conventions have it', async () => {
    const spans = await spansOfOneCall('rpc,rpc/dup')
    expect(of(spans, SpanKind.SERVER)).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.system.name': 'grpc',
      'rpc.service': 'shop.Quotes',
      'rpc.method': 'shop.Quotes/Ask',
      'rpc.grpc.status_code': status.UNAVAILABLE,
      'rpc.status_code': 'UNAVAILABLE',
    })
  })
})
