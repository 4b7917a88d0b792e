import diagnostics from 'node:diagnostics_channel'
import {
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import {
  deadlineServerInterceptor,
  grpcChannels,
  type ServerDeadlineOptions,
} from '@hourglass/grpc'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { Redis } from 'ioredis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useBullmqQueues } from './helpers/bullmqQueues.js'
import { setupOtel } from './helpers/otel.js'

// `hourglass.deadline.exceeded` counts every deadline that ran out, by where:
// a gRPC server's calls (stage `arrival` or `handler`, as an HTTP request's)
// and BullMQ jobs (`queued`: reached a worker too late; `handler`: ran out
// while running) too, not only Express and fetch. Real grpc-js over loopback
// HTTP/2 and real BullMQ on a real redis-server; the counter comes from the
// real SDK's MeterProvider, read with a pull reader. Server deadlines are on
// a ManualClock, moved by hand once the handler runs.

const METRIC = 'hourglass.deadline.exceeded'

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
    options: { deadline?: number },
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): unknown
  close(): void
}
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')

const bull = useBullmqQueues('otelexceeded')
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
    await bull.closeAll()
  } finally {
    stop()
    await otel.shutdown()
  }
})

/**
 * A server whose handler answers only when told; `started` resolves once
 * a handler runs. Calls carry `x-deadline-remaining-ms: budget`.
 */
async function quotes(options: ServerDeadlineOptions) {
  let started = () => {}
  let answer = () => {}
  const running = new Promise<void>((resolve) => {
    started = resolve
  })
  const server = new Server({ interceptors: [deadlineServerInterceptor(options)] })
  server.addService(service, {
    ask(_call: unknown, callback: (error: null, value: unknown) => void) {
      answer = () => callback(null, { price: 1 })
      started()
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
  /** `grpcTimeoutMs`: a real gRPC deadline as well (`grpc-timeout`, which grpc-js's own timer enforces). */
  const ask = (budgetMs: number, grpcTimeoutMs?: number) =>
    new Promise<{ code: number }>((resolve) => {
      const metadata = new Metadata()
      metadata.set('x-deadline-remaining-ms', String(budgetMs))
      const options = grpcTimeoutMs === undefined ? {} : { deadline: Date.now() + grpcTimeoutMs }
      client.ask({}, metadata, options, (error) =>
        resolve({ code: error ? error.code : status.OK }),
      )
    })
  return { ask, running, answer: () => answer() }
}

describe('hourglass.deadline.exceeded: gRPC server calls', () => {
  it('counts a dark-mode call once when grpc-js’s own timer answers after the observed expiry', async () => {
    const clock = new ManualClock()
    const server = await quotes({ clock, mode: 'observe', reserveMs: 0 })
    const expiries: string[] = []
    const heard = (m: unknown) => expiries.push((m as { action: string }).action)
    diagnostics.subscribe(grpcChannels.serverExpire.name, heard)
    closers.push(() => diagnostics.unsubscribe(grpcChannels.serverExpire.name, heard))
    // Budget 200 ms from grpc-timeout: observed on our clock, then enforced by grpc-js's real timer.
    const call = server.ask(5_000, 200)
    await server.running
    clock.advance(5_001)
    expect((await call).code).toBe(status.DEADLINE_EXCEEDED)
    // Both messages of that one call are out: ours (observed), then grpc-js's answer.
    await expect.poll(() => expiries).toEqual(['observed', 'status'])
    expect(await otel.counter(METRIC)).toBe(1)
    expect(await otel.counter(METRIC, { 'hourglass.deadline.stage': 'handler' })).toBe(1)
  })

  it('counts a call that ran out in its handler at stage handler, and one that arrived with no time at stage arrival', async () => {
    const clock = new ManualClock()
    const server = await quotes({ clock, reserveMs: 0 })

    const call = server.ask(5_000)
    await server.running
    clock.advance(5_001)
    expect((await call).code).toBe(status.DEADLINE_EXCEEDED)
    expect((await server.ask(0)).code).toBe(status.DEADLINE_EXCEEDED)

    await expect.poll(() => otel.counter(METRIC)).toBe(2)
    expect(await otel.counter(METRIC, { 'hourglass.deadline.stage': 'handler' })).toBe(1)
    expect(await otel.counter(METRIC, { 'hourglass.deadline.stage': 'arrival' })).toBe(1)
    // No slice is known to a gRPC expiry: the attribute is left out, not "undefined".
    const points = await otel.points(METRIC)
    expect(points.every((p) => !('hourglass.deadline.slice' in p.attributes))).toBe(true)
  })

  it('counts dark mode’s observed overrun too, as an HTTP request’s is', async () => {
    const clock = new ManualClock()
    const server = await quotes({ clock, reserveMs: 0, mode: 'observe' })
    const call = server.ask(5_000)
    await server.running
    clock.advance(5_001)
    // Observed, not enforced: the handler's late answer still reaches the caller.
    server.answer()
    expect((await call).code).toBe(status.OK)
    await expect.poll(() => otel.counter(METRIC, { 'hourglass.deadline.stage': 'handler' })).toBe(1)
    expect(await otel.counter(METRIC)).toBe(1)
  })
})

/** Redis TIME's reply, in ms: the clock a job's deadline is kept on. */
const timeMs = ([seconds, micros]: Array<number | string>) =>
  Number(seconds) * 1000 + Number(micros) / 1000

describe.skipIf(!bull.available)('hourglass.deadline.exceeded: BullMQ jobs', () => {
  it('counts a job that reached its worker after its deadline at stage queued', async () => {
    const { queue: q, events, name } = await bull.queue()
    let runs = 0
    const w = bull.worker(
      name,
      withDeadline(async () => {
        runs++
      }),
      false,
    )
    const job = await runWithDeadline(Deadline.after(100, { clock: new ManualClock() }), () =>
      addWithDeadline(q, 'weekly', {}),
    )
    // The worker is away until the job's deadline has passed on the Redis clock.
    const { expiresAtMs } = (job.opts as unknown as { hourglass: { expiresAtMs: number } })
      .hourglass
    const client = new Redis(bull.port(), '127.0.0.1')
    bull.onClose(() => client.quit())
    await expect
      .poll(async () => timeMs(await client.time()), { interval: 20, timeout: 10_000 })
      .toBeGreaterThan(expiresAtMs)
    w.run()
    await job.waitUntilFinished(events).catch(() => {})

    expect(runs).toBe(0)
    await expect.poll(() => otel.counter(METRIC)).toBe(1)
    expect(await otel.counter(METRIC, { 'hourglass.deadline.stage': 'queued' })).toBe(1)
  })

  it('dark mode: a job that reached its worker too late and ran anyway counts once, at stage queued', async () => {
    const { queue: q, events, name } = await bull.queue()
    const w = bull.worker(
      name,
      withDeadline(async () => 'done'),
      false,
    )
    const job = await runWithDeadline(
      Deadline.after(100, { observe: true, clock: new ManualClock() }),
      () => addWithDeadline(q, 'weekly', {}),
    )
    const { expiresAtMs } = (job.opts as unknown as { hourglass: { expiresAtMs: number } })
      .hourglass
    const client = new Redis(bull.port(), '127.0.0.1')
    bull.onClose(() => client.quit())
    await expect
      .poll(async () => timeMs(await client.time()), { interval: 20, timeout: 10_000 })
      .toBeGreaterThan(expiresAtMs)
    w.run()
    expect(await job.waitUntilFinished(events)).toBe('done')

    await expect.poll(() => otel.counter(METRIC)).toBe(1)
    // Its late return is the same overrun, not a second one "while running".
    expect(await otel.counter(METRIC, { 'hourglass.deadline.stage': 'queued' })).toBe(1)
  })

  it('counts a job its deadline stopped while running at stage handler, and not one that finished in time', async () => {
    const { queue: q, events, name } = await bull.queue()
    const clock = new ManualClock()
    let started = () => {}
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    bull.worker(
      name,
      withDeadline(
        (job, _token, signal) =>
          job.data.hang
            ? new Promise((_resolve, reject) => {
                signal?.addEventListener('abort', () => reject(signal.reason))
                started()
              })
            : Promise.resolve('done'),
        { clock },
      ),
    )
    const add = (data: object) =>
      runWithDeadline(Deadline.after(300, { clock: new ManualClock() }), () =>
        addWithDeadline(q, 'weekly', data),
      )
    const fine = await add({})
    await fine.waitUntilFinished(events)
    const stopped = await add({ hang: true })
    await running
    clock.advance(301)
    await stopped.waitUntilFinished(events).catch(() => {})

    await expect.poll(() => otel.counter(METRIC)).toBe(1)
    expect(await otel.counter(METRIC, { 'hourglass.deadline.stage': 'handler' })).toBe(1)
  })
})
