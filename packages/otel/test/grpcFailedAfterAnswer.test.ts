import {
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
} from '@grpc/grpc-js'
import { DeadlineExceededError } from '@hourglass/core'
import { deadlineErrors, deadlineServerInterceptor } from '@hourglass/grpc'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { captureWarnings } from '../../grpc/test/support/captureWarnings.js'
import { jsonUnary } from './helpers/jsonUnary.js'
import { setupOtel } from './helpers/otel.js'

// Real grpc-js over loopback HTTP/2; the counter comes from instrumentDeadlines
// on the real SDK's MeterProvider, read with a pull reader.

const service = { save: jsonUnary('/shop.Orders/Save') }
interface OrdersClient {
  save(
    request: unknown,
    metadata: Metadata,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): unknown
  close(): void
}
const OrdersClient = makeGenericClientConstructor(service, 'Orders')

const METRIC = 'hourglass.grpc.server.failed_after_answer'

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const closers: Array<() => void> = []
let captured: ReturnType<typeof captureWarnings>

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  // The failures below are process warnings too: taken here, asserted on, and
  // kept off the test output (a 'warning' listener only watches: Node still
  // prints each). Any other warning still shows.
  captured = captureWarnings('HOURGLASS_GRPC_FAILED_AFTER_ANSWER')
})
afterEach(async () => {
  try {
    for (const close of closers.splice(0)) close()
  } finally {
    captured.restore()
    stop()
    await otel.shutdown()
  }
})

describe('gRPC handlers that fail after they answered', () => {
  it('are counted in hourglass.grpc.server.failed_after_answer, by method and error type; an answer that stood alone is not', async () => {
    const server = new Server({ interceptors: [deadlineServerInterceptor()] })
    server.addService(
      service,
      deadlineErrors({
        async save(
          call: { request: { after?: string } },
          callback: (error: null, value: unknown) => void,
        ) {
          callback(null, { saved: true })
          // Follow-up work after the answer: an audit write that fails.
          if (call.request.after === 'error') throw new Error('audit log unavailable')
          if (call.request.after === 'deadline') {
            throw new DeadlineExceededError({ budgetMs: 10, elapsedMs: 10, slice: 'audit' })
          }
        },
      }),
    )
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    )
    const client = new OrdersClient(
      `127.0.0.1:${port}`,
      credentials.createInsecure(),
    ) as unknown as OrdersClient
    closers.push(
      () => client.close(),
      () => server.forceShutdown(),
    )
    const save = (request: unknown) =>
      new Promise<unknown>((resolve, reject) =>
        client.save(request, new Metadata(), (error, value) =>
          error ? reject(error) : resolve(value),
        ),
      )

    expect(await save({})).toEqual({ saved: true })
    expect(await save({ after: 'error' })).toEqual({ saved: true })
    expect(await save({ after: 'error' })).toEqual({ saved: true })
    expect(await save({ after: 'deadline' })).toEqual({ saved: true })

    const method = { 'rpc.system': 'grpc', 'rpc.service': 'shop.Orders', 'rpc.method': 'Save' }
    await expect.poll(() => otel.counter(METRIC)).toBe(3)
    expect(await otel.counter(METRIC, { ...method, 'error.type': 'Error' })).toBe(2)
    expect(await otel.counter(METRIC, { ...method, 'error.type': 'DEADLINE_EXCEEDED' })).toBe(1)
    // Low cardinality: never the message.
    const points = await otel.points(METRIC)
    expect(points.flatMap((p) => Object.values(p.attributes))).not.toContain(
      'audit log unavailable',
    )
    // One warning per failure counted, the answer that stood alone none.
    expect(captured.warnings.map((w) => [w.code, w.message])).toEqual(
      [
        'audit log unavailable',
        'audit log unavailable',
        'deadline exceeded in slice "audit": 10 ms elapsed of a 10 ms budget',
      ].map((message) => [
        'HOURGLASS_GRPC_FAILED_AFTER_ANSWER',
        `the handler of /shop.Orders/Save rejected after it had answered: ${message}`,
      ]),
    )
  })
})
