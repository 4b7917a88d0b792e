import {
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
} from '@grpc/grpc-js'
import { deadlineServerInterceptor, type ServerDeadlineOptions } from '@hourglass/grpc'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

// A gRPC server is an ingress as an Express app is: the budget its calls
// arrive with, and the callers that leave, belong in the same metrics.

const json = {
  serialize: (value: unknown) => Buffer.from(JSON.stringify(value ?? null)),
  deserialize: (bytes: Buffer) => JSON.parse(bytes.toString('utf8')) as unknown,
}
const method = (name: string, responseStream: boolean) => ({
  path: `/shop.Quotes/${name}`,
  requestStream: false,
  responseStream,
  requestSerialize: json.serialize,
  requestDeserialize: json.deserialize,
  responseSerialize: json.serialize,
  responseDeserialize: json.deserialize,
})
const service = { ask: method('Ask', false), watch: method('Watch', true) }
interface QuotesClient {
  ask(
    request: unknown,
    metadata: Metadata,
    options: { deadline?: number },
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): { cancel(): void }
  watch(request: unknown, metadata: Metadata): { on(e: string, f: () => void): unknown }
  close(): void
}
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')

const REMAINING = 'hourglass.deadline.ingress.remaining'
const CLOSED = 'hourglass.deadline.client_closed'

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const closers: Array<() => void> = []

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  try {
    for (const close of closers.splice(0)) close()
  } finally {
    stop()
    await otel.shutdown()
  }
})

async function start(
  implementation: Record<string, unknown>,
  options: ServerDeadlineOptions,
): Promise<QuotesClient> {
  const server = new Server({ interceptors: [deadlineServerInterceptor(options)] })
  server.addService(service, implementation as never)
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
  return client
}

const answer = (_call: unknown, callback: (e: null, v: unknown) => void) => callback(null, {})

describe('gRPC server calls in the ingress metrics', () => {
  it('a call records what its handler had left in hourglass.deadline.ingress.remaining, by source, mode and method', async () => {
    const client = await start({ ask: answer }, { reserveMs: 10 })
    await new Promise((resolve) =>
      client.ask({}, new Metadata(), { deadline: Date.now() + 800 }, resolve),
    )
    const seen = await otel.histogram(REMAINING, {
      'hourglass.deadline.source': 'grpc-timeout',
      'hourglass.deadline.mode': 'enforce',
      'rpc.system': 'grpc',
      'rpc.method': 'Ask',
    })
    expect(seen.count).toBe(1)
    expect(seen.max).toBeLessThanOrEqual(0.79)
    expect(seen.min).toBeGreaterThan(0.5)
  })

  it('not a call strict refused (its budget is only the fallback), nor a stream without a deadline', async () => {
    const client = await start(
      {
        ask: answer,
        watch: (call: { end(): void }) => call.end(),
      },
      { reserveMs: 10, strict: true },
    )
    const metadata = new Metadata()
    metadata.set('x-deadline-remaining-ms', 'soon')
    await new Promise((resolve) => client.ask({}, metadata, {}, resolve))
    await new Promise((resolve) =>
      client.watch({}, new Metadata()).on('status', () => resolve(null)),
    )
    expect((await otel.histogram(REMAINING)).count).toBe(0)
  })

  it('a caller that leaves before the answer counts in hourglass.deadline.client_closed', async () => {
    let started: () => void = () => {}
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const client = await start({ ask: () => started() }, { reserveMs: 10 })
    const call = client.ask({}, new Metadata(), { deadline: Date.now() + 5000 }, () => {})
    await running
    call.cancel()
    await expect.poll(() => otel.counter(CLOSED)).toBe(1)
  })
})
