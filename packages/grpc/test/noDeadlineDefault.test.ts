import {
  type ClientReadableStream,
  type handleBidiStreamingCall,
  type handleClientStreamingCall,
  type handleServerStreamingCall,
  type handleUnaryCall,
  Metadata,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import {
  Deadline,
  isDeadlineExceeded,
  MAX_TIMER_MS,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type ClientDeadlineOptions,
  deadlineInterceptor,
  fromGrpcError,
  type GrpcClientEndMessage,
  type GrpcClientStartMessage,
  grpcChannels,
  withCallDeadline,
} from '../src/index.js'
import {
  type Arrival,
  arrival,
  connect,
  deferred,
  type RunningServer,
  record,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// A call with no deadline anywhere (none in the context, none of its own)
// used to be sent with no gRPC deadline: against a server that never
// answers, a unary call stayed pending forever. Now unary and
// client-streaming calls get `defaultMs` as their gRPC deadline.

let server: RunningServer | undefined
const clients: WorkClientApi[] = []
const recordings: Array<{ stop(): void }> = []

afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  await server?.close()
  server = undefined
  for (const r of recordings.splice(0)) r.stop()
})

function watch<T>(channel: { name: string }) {
  const r = record<T>(channel)
  recordings.push(r)
  return r
}

/**
 * A plain grpc-js server: unary calls are never answered when `hang`,
 * else answered at once; client-streaming calls are answered on `end`; stream
 * calls send one message and stay open. Every call reports what it saw.
 */
async function plainServer(hang: boolean) {
  const arrivals: Arrival[] = []
  const arrived = deferred<Arrival>()
  const seen = (call: Parameters<typeof arrival>[0]) => {
    const a = arrival(call)
    arrivals.push(a)
    arrived.resolve(a)
  }
  const unaryHandler: handleUnaryCall<unknown, unknown> = (call, callback) => {
    seen(call)
    if (!hang) callback(null, {})
  }
  const clientStream: handleClientStreamingCall<unknown, unknown> = (call, callback) => {
    seen(call)
    call.on('data', () => {})
    call.on('end', () => callback(null, {}))
  }
  const serverStream: handleServerStreamingCall<unknown, unknown> = (call) => {
    seen(call)
    call.write({ n: 1 })
  }
  const bidi: handleBidiStreamingCall<unknown, unknown> = (call) => {
    seen(call)
    call.on('data', () => {})
    call.write({ n: 1 })
  }
  server = await startServer({ unary: unaryHandler, clientStream, serverStream, bidi })
  return { arrivals, arrived: arrived.promise }
}

function client(options: ClientDeadlineOptions = {}): WorkClientApi {
  const c = connect(server!.address, [deadlineInterceptor(options)])
  clients.push(c)
  return c
}

/** The first message of a response stream, then the call is cancelled; resolves with its error. */
async function firstMessageThenCancel(
  stream: ClientReadableStream<unknown>,
): Promise<ServiceError> {
  const error = new Promise<ServiceError>((resolve) => stream.on('error', resolve))
  await new Promise<void>((resolve) => stream.on('data', () => resolve()))
  stream.cancel()
  return error
}

describe('deadlineInterceptor: a call with no deadline at all gets defaultMs', () => {
  it('a unary call to a server that never answers ends DEADLINE_EXCEEDED; the server received grpc-timeout ≤ defaultMs', async () => {
    const { arrived } = await plainServer(true)
    const starts = watch<GrpcClientStartMessage>(grpcChannels.clientStart)
    const ends = watch<GrpcClientEndMessage>(grpcChannels.clientEnd)
    // 1 s of wall clock: the call must connect and reach the server before
    // grpc-js's timer ends it (200 ms could run out first on a loaded machine).
    const pending = unary(client({ defaultMs: 1000 }), {})
    // What the server saw first: without a default the call below never ends.
    const seen = await arrived
    expect(seen.grpcMs).toBeLessThanOrEqual(1000)
    // A gRPC deadline only, like a call's own: no Hourglass header without a caller deadline.
    expect(seen.header).toBeUndefined()
    const result = await pending
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(isDeadlineExceeded(fromGrpcError(result.error))).toBe(true)
    // Reported as a call under a deadline is: its budget, then `expired`.
    expect(starts.messages).toHaveLength(1)
    expect(starts.messages[0]).toMatchObject({ deadline: undefined, refused: false })
    expect(starts.messages[0]!.budgetMs).toBeLessThanOrEqual(1000)
    expect(starts.messages[0]!.budgetMs).toBeGreaterThan(0)
    expect(ends.messages[0]).toMatchObject({
      call: starts.messages[0]!.call,
      code: status.DEADLINE_EXCEEDED,
      outcome: 'expired',
    })
  })

  it('a client-streaming call gets it too', async () => {
    const { arrived } = await plainServer(false)
    const answered = deferred<ServiceError | null>()
    // Answered, so the default must outlast a round trip on a loaded machine.
    const stream = client({ defaultMs: 5000 }).clientStream(new Metadata(), {}, (error) =>
      answered.resolve(error),
    )
    stream.end()
    expect(await answered.promise).toBeNull()
    const seen = await arrived
    expect(seen.grpcMs).toBeLessThanOrEqual(5000)
    expect(seen.header).toBeUndefined()
  })

  it('the default is 30 s', async () => {
    const { arrivals } = await plainServer(false)
    expect((await unary(client(), {})).error).toBeUndefined()
    expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(30_000)
    expect(arrivals[0]!.grpcMs).toBeGreaterThan(20_000)
  })

  it('defaultMs: Infinity keeps such a call without a gRPC deadline: the server sees no grpc-timeout, the call stays until cancelled', async () => {
    const { arrived } = await plainServer(true)
    const starts = watch<GrpcClientStartMessage>(grpcChannels.clientStart)
    const answered = deferred<ServiceError | null>()
    const call = client({ defaultMs: Number.POSITIVE_INFINITY }).unary(
      {},
      new Metadata(),
      {},
      (error) => answered.resolve(error),
    )
    expect(await arrived).toEqual({ grpcMs: Number.POSITIVE_INFINITY, header: undefined })
    expect(starts.messages[0]!.budgetMs).toBe(Number.POSITIVE_INFINITY)
    call.cancel()
    expect((await answered.promise)?.code).toBe(status.CANCELLED)
  })

  it("a call under a deadline is unchanged: the caller's deadline wins, shorter or longer than defaultMs", async () => {
    const { arrivals } = await plainServer(false)
    const short = client({ defaultMs: 200 })
    const long = client({ defaultMs: 60_000 })
    // Manual clocks: exactly 5000 and 1500 ms are left whatever the box is
    // doing. grpc-js's own deadline is on the wall clock, and each call must
    // be answered within it (150 ms, on a client still to connect, is tight).
    await runWithDeadline(Deadline.after(5000, { clock: new ManualClock() }), () =>
      unary(short, {}),
    )
    await runWithDeadline(Deadline.after(1500, { clock: new ManualClock() }), () => unary(long, {}))
    await unary(short, {}, withCallDeadline(Deadline.after(4000, { clock: new ManualClock() })))
    expect(arrivals[0]!.header).toBe('5000')
    expect(arrivals[0]!.grpcMs).toBeGreaterThan(200) // not cut to the default
    expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(5000)
    expect(arrivals[1]!.header).toBe('1500')
    expect(arrivals[1]!.grpcMs).toBeLessThanOrEqual(1500)
    expect(arrivals[2]!.header).toBe('4000')
    expect(arrivals[2]!.grpcMs).toBeGreaterThan(200)
  })

  it("a call's own deadline is kept, longer than defaultMs too; one that is no time (NaN) counts as none", async () => {
    const { arrivals } = await plainServer(false)
    // The NaN call runs on the default's wall-clock time: long enough for a round trip.
    const work = client({ defaultMs: 2000 })
    await unary(work, {}, { deadline: Date.now() + 60_000 })
    await unary(work, {}, { deadline: Number.NaN })
    expect(arrivals[0]!.grpcMs).toBeGreaterThan(2000)
    expect(arrivals[1]!.grpcMs).toBeLessThanOrEqual(2000)
  })

  it.each([
    ['server-streaming', (c: WorkClientApi) => c.serverStream({}, new Metadata(), {})],
    ['bidi', (c: WorkClientApi) => c.bidi(new Metadata(), {})],
  ])('a %s call gets no default (long-lived by design): no grpc-timeout', async (_, open) => {
    const { arrived } = await plainServer(true)
    const starts = watch<GrpcClientStartMessage>(grpcChannels.clientStart)
    const error = await firstMessageThenCancel(open(client({ defaultMs: 200 })))
    expect(await arrived).toEqual({ grpcMs: Number.POSITIVE_INFINITY, header: undefined })
    expect(starts.messages[0]!.budgetMs).toBe(Number.POSITIVE_INFINITY)
    expect(error.code).toBe(status.CANCELLED)
  })

  it('defaultMs is checked when the interceptor is created', () => {
    for (const bad of [0, -1, Number.NaN, Number.NEGATIVE_INFINITY, MAX_TIMER_MS + 1]) {
      expect(() => deadlineInterceptor({ defaultMs: bad }), String(bad)).toThrow(RangeError)
      expect(() => deadlineInterceptor({ defaultMs: bad }), String(bad)).toThrow(/defaultMs/)
    }
    expect(() => deadlineInterceptor({ defaultMs: '100' as unknown as number })).toThrow(TypeError)
    for (const good of [1, 200.5, MAX_TIMER_MS, Number.POSITIVE_INFINITY]) {
      expect(() => deadlineInterceptor({ defaultMs: good }), String(good)).not.toThrow()
    }
  })
})
