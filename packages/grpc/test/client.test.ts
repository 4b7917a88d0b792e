import {
  type CallOptions,
  type handleServerStreamingCall,
  type handleUnaryCall,
  InterceptingCall,
  type Interceptor,
  Metadata,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import {
  ClientClosedError,
  Deadline,
  isClientClosed,
  isDeadlineExceeded,
  MAX_TIMER_MS,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { watchLoopStalls } from '../../../test/support/loopStalls.js'
import {
  type ClientDeadlineOptions,
  deadlineInterceptor,
  deadlineServerInterceptor,
  fromGrpcError,
  type GrpcClientEndMessage,
  type GrpcClientStartMessage,
  type GrpcServerEndMessage,
  type GrpcServerStartMessage,
  grpcChannels,
  withCallDeadline,
} from '../src/index.js'
import { countHooks } from './support/channelHarness.js'
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

/** A plain server that answers every unary call with what it saw. */
async function echoServer(): Promise<{ arrivals: Arrival[]; calls: () => number }> {
  const arrivals: Arrival[] = []
  const handler: handleUnaryCall<unknown, unknown> = (call, callback) => {
    arrivals.push(arrival(call))
    callback(null, {})
  }
  server = await startServer({ unary: handler })
  return { arrivals, calls: () => arrivals.length }
}

function client(options: ClientDeadlineOptions = {}, address = server!.address): WorkClientApi {
  const c = connect(address, [deadlineInterceptor(options)])
  clients.push(c)
  return c
}

/**
 * Resolves once `c`'s channel is connected. A channel's first call also
 * waits for its connection, on the wall clock its grpc-js deadline runs on:
 * a loaded machine took more than a 750 ms budget for both (grpc-js's own
 * timer ended the call, outcome `expired`). Connected first, a call's budget
 * is for its round trip alone.
 */
function ready(c: WorkClientApi): Promise<void> {
  return new Promise((resolve, reject) =>
    c.waitForReady(Date.now() + 10_000, (error) => (error ? reject(error) : resolve())),
  )
}

describe('deadlineInterceptor: every call carries the caller deadline', () => {
  it('the call is given min(its own deadline, remaining − reserveMs) as grpc-timeout, and x-deadline-remaining-ms says the same', async () => {
    const { arrivals } = await echoServer()
    const starts = watch<GrpcClientStartMessage>(grpcChannels.clientStart)
    const ends = watch<GrpcClientEndMessage>(grpcChannels.clientEnd)
    const work = client({ reserveMs: 50 })
    await ready(work)
    // A manual clock: exactly 800 ms are left whatever the box is doing.
    const deadline = Deadline.after(800, { clock: new ManualClock() })
    // grpc-timeout is grpc-js's own wall-clock deadline, written as the call
    // is sent: a loaded box that keeps this process from running meanwhile
    // shortens it (seen: 518, the call connecting its channel then).
    const stalls = watchLoopStalls()
    await runWithDeadline(deadline, () => unary(work, {}))
    const stalledMs = stalls.stop()
    expect(arrivals[0]!.header).toBe('750')
    expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(750)
    expect(arrivals[0]!.grpcMs).toBeGreaterThan(650 - stalledMs)
    expect(starts.messages[0]).toMatchObject({
      deadline,
      method: '/hourglass.test.Work/Unary',
      remainingMs: 800,
      headerMs: 750,
      refused: false,
      // The channel's target as grpc-js names it (a tracer's server.address and server.port).
      target: `dns:${server!.address}`,
    })
    expect(ends.messages[0]).toMatchObject({ outcome: 'ok', target: `dns:${server!.address}` })
    // The gRPC deadline's ms from the call's start, on the wall clock: a
    // moment after the call was made (the first call makes its channel's).
    expect(starts.messages[0]!.budgetMs).toBeLessThanOrEqual(750)
    expect(starts.messages[0]!.budgetMs).toBeGreaterThan(650 - stalledMs)
  })

  it("a call's own shorter deadline wins; a longer one is cut to the caller's", async () => {
    const { arrivals } = await echoServer()
    const work = client()
    const deadline = Deadline.after(5000, { clock: new ManualClock() })
    // The own deadline is on the wall clock and the first call still has to
    // connect: 2 s, not 200 ms, so a loaded machine cannot end it unanswered.
    await runWithDeadline(deadline, async () => {
      await unary(work, {}, { deadline: Date.now() + 2000 })
      await unary(work, {}, { deadline: new Date(Date.now() + 60_000) })
    })
    expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(2000)
    expect(arrivals[1]!.grpcMs).toBeLessThanOrEqual(5000)
    expect(arrivals[1]!.grpcMs).toBeGreaterThan(4000)
    // The header says the budget the call has: its own when shorter (a server
    // reading only the header must not plan on 5 s), else the caller's.
    expect(Number(arrivals[0]!.header)).toBeLessThanOrEqual(2000)
    expect(Number(arrivals[0]!.header)).toBeGreaterThan(1000)
    expect(arrivals[1]!.header).toBe('5000')
  })

  it("a call whose own deadline option is null (grpc-js: no deadline) gets the caller's, not an instant DEADLINE_EXCEEDED", async () => {
    const { arrivals } = await echoServer()
    const work = client()
    await ready(work)
    const deadline = Deadline.after(900, { clock: new ManualClock() })
    // JavaScript callers write `deadline: null` for "none"; grpc-js reads it as Infinity.
    const options = { deadline: null } as unknown as CallOptions
    const result = await runWithDeadline(deadline, () => unary(work, {}, options))
    expect(result.error).toBeUndefined()
    expect(arrivals[0]!.header).toBe('900')
    expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(900) // the caller's deadline, not none
  })

  it('a call whose own deadline is neither a Date nor a number (an ISO string out of JSON) is refused where it is made, as grpc-js refuses it: a TypeError, not an instant DEADLINE_EXCEEDED or a crash', async () => {
    const { calls } = await echoServer()
    const work = client()
    const deadline = Deadline.after(5_000, { clock: new ManualClock() })
    // Connected first: on a connected channel the coerced NaN reached grpc-js's
    // "Deadline is too far in the future", thrown where nothing caught it.
    expect((await runWithDeadline(deadline, () => unary(work, {}))).error).toBeUndefined()
    const answered: unknown[] = []
    for (const own of ['2030-01-01T00:00:00Z', {}, true]) {
      expect(() =>
        runWithDeadline(deadline, () =>
          work.unary({}, new Metadata(), { deadline: own } as unknown as CallOptions, (error) =>
            answered.push(error),
          ),
        ),
      ).toThrow(TypeError)
    }
    expect(() =>
      runWithDeadline(deadline, () =>
        work.unary({}, new Metadata(), { deadline: '2030' } as unknown as CallOptions, () => {}),
      ),
    ).toThrow(
      "deadlineInterceptor: the call's deadline option must be a Date or a number of epoch ms, got '2030' (a string)",
    )
    // A round trip later: nothing was sent, and no callback was called.
    expect((await runWithDeadline(deadline, () => unary(work, {}))).error).toBeUndefined()
    expect(calls()).toBe(2)
    expect(answered).toEqual([])
  })

  it.each([
    ['an invalid Date', new Date(Number.NaN)],
    ['NaN', Number.NaN],
  ])(
    "a call whose own deadline is %s gets the caller's (the smallest valid one wins), not a NaN budget",
    async (_, own) => {
      const { arrivals } = await echoServer()
      const work = client()
      await ready(work)
      const starts = watch<GrpcClientStartMessage>(grpcChannels.clientStart)
      const deadline = Deadline.after(900, { clock: new ManualClock() })
      const result = await runWithDeadline(deadline, () =>
        unary(work, {}, { deadline: own } as CallOptions),
      )
      expect(result.error).toBeUndefined()
      expect(arrivals[0]!.header).toBe('900')
      expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(900)
      // Ms from the call's start on the wall clock: a number, not NaN.
      expect(starts.messages[0]!.budgetMs).toBeLessThanOrEqual(900)
      expect(starts.messages[0]!.budgetMs).toBeGreaterThan(0)
    },
  )

  it('withCallDeadline(deadline) gives one call its deadline explicitly, outside any context', async () => {
    const { arrivals } = await echoServer()
    const work = client()
    await ready(work)
    const deadline = Deadline.after(1234, { clock: new ManualClock() })
    await unary(work, {}, withCallDeadline(deadline, { deadline: Date.now() + 60_000 }))
    expect(arrivals[0]!.header).toBe('1234')
    expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(1234)
  })

  it('withCallDeadline refuses what is not a Deadline (a number of ms, a Date) where it is written, naming it', async () => {
    const { calls } = await echoServer()
    const work = client()
    for (const [given, shown] of [
      [5_000, '5000'],
      [new Date(Date.now() + 5_000), 'an object'],
      ['5000', "'5000' (a string)"],
    ] as const) {
      expect(() => unary(work, {}, withCallDeadline(given as unknown as Deadline))).toThrow(
        new TypeError(
          `withCallDeadline: deadline must be a Deadline from @hourglass/core (Deadline.after(ms)), got ${shown}`,
        ),
      )
    }
    // None current is none given: the call goes out as without it.
    expect(
      (await unary(work, {}, withCallDeadline(undefined as unknown as Deadline))).error,
    ).toBeUndefined()
    expect(calls()).toBe(1)
  })

  it("withCallDeadline with interceptors of its own (which replace the client's in grpc-js) is refused where it is written unless they include deadlineInterceptor(): the deadline would be ignored", async () => {
    const { arrivals } = await echoServer()
    const work = client()
    const deadline = Deadline.after(1234, { clock: new ManualClock() })
    const logging: Interceptor = (options, nextCall) => new InterceptingCall(nextCall(options))
    expect(() => unary(work, {}, withCallDeadline(deadline, { interceptors: [logging] }))).toThrow(
      /withCallDeadline: .*interceptors.*deadlineInterceptor\(\)/,
    )
    expect(arrivals).toHaveLength(0)
    // With ours among them, the call carries the deadline.
    const listed = withCallDeadline(deadline, { interceptors: [logging, deadlineInterceptor()] })
    expect((await unary(work, {}, listed)).error).toBeUndefined()
    expect(arrivals[0]!.header).toBe('1234')
    expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(1234)
  })

  it('a call without any deadline gets no header, and no gRPC deadline with defaultMs: Infinity (see noDeadlineDefault.test.ts)', async () => {
    const { arrivals } = await echoServer()
    const ends = watch<GrpcClientEndMessage>(grpcChannels.clientEnd)
    await unary(client({ defaultMs: Number.POSITIVE_INFINITY }), {})
    expect(arrivals[0]).toEqual({ grpcMs: Number.POSITIVE_INFINITY, header: undefined })
    expect(ends.messages[0]).toMatchObject({ deadline: undefined, code: status.OK, outcome: 'ok' })
  })

  it('a handler forwarding its inbound metadata (x-deadline-remaining-ms: 50) on a call exempted with Deadline.never(), or under a dark-mode deadline already past, does not send that stale header on', async () => {
    const { arrivals } = await echoServer()
    const work = client()
    const inbound = new Metadata()
    inbound.set('x-deadline-remaining-ms', '50')
    await unary(work, {}, withCallDeadline(Deadline.never()), inbound)
    const clock = new ManualClock()
    const dark = Deadline.after(100, { clock, observe: true })
    clock.advance(200)
    await unary(work, {}, withCallDeadline(dark), inbound)
    expect(arrivals.map((a) => a.header)).toEqual([undefined, undefined])
    // The caller's object is left as it was.
    expect(inbound.get('x-deadline-remaining-ms')).toEqual(['50'])
  })

  it("the caller's Metadata object is not changed (it may be shared by calls)", async () => {
    const { arrivals } = await echoServer()
    const work = client()
    await ready(work)
    const shared = new Metadata()
    shared.set('x-request-id', 'r1')
    await runWithDeadline(Deadline.after(700, { clock: new ManualClock() }), () =>
      unary(work, {}, {}, shared),
    )
    expect(arrivals[0]!.header).toBe('700')
    expect(shared.getMap()).toEqual({ 'x-request-id': 'r1' })
  })

  it("events: start and end of one call share `call`; a subscriber may add to the metadata sent (a traceparent), not to the caller's", async () => {
    const seen: string[] = []
    const handler: handleUnaryCall<unknown, unknown> = (call, callback) => {
      seen.push(String(call.metadata.get('traceparent')[0]))
      callback(null, {})
    }
    server = await startServer({ unary: handler })
    const ends = watch<GrpcClientEndMessage>(grpcChannels.clientEnd)
    const inject = (m: GrpcClientStartMessage) => m.metadata?.set('traceparent', 'tp-1')
    grpcChannels.clientStart.subscribe(inject)
    const starts = watch<GrpcClientStartMessage>(grpcChannels.clientStart)
    try {
      const mine = new Metadata()
      const work = client()
      await unary(work, {}, {}, mine) // no deadline at all: still a copy
      await runWithDeadline(Deadline.after(900, { clock: new ManualClock() }), () =>
        unary(work, {}, {}, mine),
      )
      expect(seen).toEqual(['tp-1', 'tp-1'])
      expect(mine.get('traceparent')).toEqual([])
      expect(starts.messages.map((m) => m.call)).toEqual(ends.messages.map((m) => m.call))
      expect(starts.messages[0]!.call).not.toBe(starts.messages[1]!.call)
    } finally {
      grpcChannels.clientStart.unsubscribe(inject)
    }
  })

  it('an observe-only deadline propagates the header but does not enforce: no gRPC deadline, no refusal', async () => {
    const { arrivals, calls } = await echoServer()
    const work = client()
    const clock = new ManualClock()
    const observing = Deadline.after(300, { clock, observe: true })
    await runWithDeadline(observing, () => unary(work, {}))
    clock.advance(400)
    const late = await runWithDeadline(observing, () => unary(work, {}))
    expect(late.error).toBeUndefined()
    expect(calls()).toBe(2)
    expect(arrivals[0]).toEqual({ grpcMs: Number.POSITIVE_INFINITY, header: '300' })
    // Past its deadline, dark mode must not make the next hop answer DEADLINE_EXCEEDED.
    expect(arrivals[1]).toEqual({ grpcMs: Number.POSITIVE_INFINITY, header: undefined })
  })

  it('a caller deadline beyond 2^31-1 ms (30 days) sets no gRPC deadline, which grpc-js would wrap into the past, and caps the header', async () => {
    const { arrivals } = await echoServer() // a plain grpc-js server
    const work = client()
    const far = Deadline.after(30 * 24 * 3600 * 1000, { clock: new ManualClock() })
    const result = await runWithDeadline(far, () => unary(work, {}))
    expect(result.error).toBeUndefined()
    expect(arrivals[0]).toEqual({ grpcMs: Number.POSITIVE_INFINITY, header: String(MAX_TIMER_MS) })
    // Against our server, the capped header is read and cut to its maxMs.
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const answer: handleUnaryCall<unknown, unknown> = (_call, callback) => callback(null, {})
    const ours = await startServer({ unary: answer }, [
      deadlineServerInterceptor({ maxMs: 10_000 }),
    ])
    try {
      const answered = await runWithDeadline(far, () => unary(client({}, ours.address), {}))
      expect(answered.error).toBeUndefined()
      expect(starts.messages[0]).toMatchObject({ budgetMs: 10_000, clamped: true })
    } finally {
      await ours.close()
    }
  })

  it('a caller deadline just under 2^31-1 ms is sent as whole seconds rounded down, not wrapped by the server into the past', async () => {
    const { arrivals } = await echoServer() // a plain grpc-js server
    const work = client()
    // grpc-js writes this many ms as whole seconds rounded up: 2147484S, past 2^31-1 ms.
    const far = Deadline.after(MAX_TIMER_MS - 100, { clock: new ManualClock() })
    await runWithDeadline(far, () => unary(work, {}))
    expect(arrivals[0]!.grpcMs).toBeGreaterThan(MAX_TIMER_MS - 2000)
    expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(MAX_TIMER_MS - 100)
    // Against our server the call is answered, not DEADLINE_EXCEEDED on arrival.
    const answer: handleUnaryCall<unknown, unknown> = (_call, callback) => callback(null, {})
    const ours = await startServer({ unary: answer }, [deadlineServerInterceptor()])
    try {
      const answered = await runWithDeadline(far, () => unary(client({}, ours.address), {}))
      expect(answered.error).toBeUndefined()
    } finally {
      await ours.close()
    }
  })

  it.each([
    ['30 days out, no caller deadline', 30 * 24 * 3600 * 1000, undefined],
    [
      '30 days out, under a caller deadline of 40 days',
      30 * 24 * 3600 * 1000,
      40 * 24 * 3600 * 1000,
    ],
    ['just under 2^31-1 ms out', MAX_TIMER_MS - 100, undefined],
  ] as const)(
    "a call's own deadline option %s is answered, not DEADLINE_EXCEEDED on arrival (grpc-js's server wraps it into the past)",
    async (_, ownMs, callerMs) => {
      const { arrivals } = await echoServer() // a plain grpc-js server
      const call = (work: WorkClientApi) => {
        const run = () => unary(work, {}, { deadline: Date.now() + ownMs })
        return callerMs === undefined
          ? run()
          : runWithDeadline(Deadline.after(callerMs, { clock: new ManualClock() }), run)
      }
      const plain = await call(client())
      expect(plain.error?.details).toBeUndefined()
      // Bounded still: at most 2^31-1 ms, never later than the call asked.
      expect(arrivals[0]!.grpcMs).toBeGreaterThan(
        MAX_TIMER_MS - 2000 - (MAX_TIMER_MS - Math.min(ownMs, MAX_TIMER_MS)),
      )
      expect(arrivals[0]!.grpcMs).toBeLessThanOrEqual(Math.min(ownMs, MAX_TIMER_MS))
      const answer: handleUnaryCall<unknown, unknown> = (_call, callback) => callback(null, {})
      const ours = await startServer({ unary: answer }, [deadlineServerInterceptor()])
      try {
        const answered = await call(client({}, ours.address))
        expect(answered.error?.details).toBeUndefined()
      } finally {
        await ours.close()
      }
    },
  )

  it('options are checked when the interceptor is created', () => {
    expect(() => deadlineInterceptor({ reserveMs: -1 })).toThrow(/reserveMs/)
    expect(() => deadlineInterceptor({ minBudgetMs: Number.NaN })).toThrow(/minBudgetMs/)
  })

  it('an option it does not know (a typo) is refused when the interceptor is created, naming the one meant', () => {
    const typo = () => deadlineInterceptor({ reserveMS: 50 } as never)
    expect(typo).toThrow(TypeError)
    expect(typo).toThrow(/"reserveMS" \(did you mean reserveMs\?\)/)
    expect(() => deadlineInterceptor({ timeout: 1000 } as never)).toThrow(/did you mean defaultMs/)
  })
})

describe('deadlineInterceptor: no budget, no call', () => {
  it('with less than minBudgetMs left the call fails at once with DEADLINE_EXCEEDED and nothing is sent', async () => {
    // Nothing listens on this address: a call that were sent would fail UNAVAILABLE.
    const probe = await startServer({})
    const address = probe.address
    await probe.close()
    const starts = watch<GrpcClientStartMessage>(grpcChannels.clientStart)
    const ends = watch<GrpcClientEndMessage>(grpcChannels.clientEnd)
    const work = client({ minBudgetMs: 5, reserveMs: 10 }, address)
    const deadline = Deadline.after(14, { clock: new ManualClock() })
    const result = await runWithDeadline(deadline, () => unary(work, {}))
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.details).toMatch(/^not sent, no budget left: /)
    expect(isDeadlineExceeded(fromGrpcError(result.error))).toBe(true)
    expect(starts.messages[0]).toMatchObject({
      refused: true,
      budgetMs: 0,
      headerMs: undefined,
      target: undefined,
    })
    expect(ends.messages[0]).toMatchObject({
      outcome: 'refused',
      code: status.DEADLINE_EXCEEDED,
      target: undefined,
    })
    // The channel never tried to connect.
    expect(work.getChannel().getConnectivityState(false)).toBe(0)
  })

  it('a refused client-streaming call completes its writes and its end() as a failed call does: a writer awaiting them (pipeline, drain) is not left hanging', async () => {
    const { calls } = await echoServer()
    const work = client()
    const clock = new ManualClock()
    const spent = Deadline.after(1, { clock })
    clock.advance(1)
    const ended = deferred<number | undefined>()
    const call = work.clientStream(new Metadata(), withCallDeadline(spent), (error) =>
      ended.resolve(error?.code),
    )
    const written = deferred()
    const finished = deferred()
    call.write({ part: 1 }, () => written.resolve())
    call.end(() => finished.resolve())
    expect(await ended.promise).toBe(status.DEADLINE_EXCEEDED)
    // On the old code these never settled: the test ran into its timeout.
    await written.promise
    await finished.promise
    // A bidi call's writable side the same.
    const bidi = work.bidi(new Metadata(), withCallDeadline(spent))
    bidi.on('error', () => {})
    const bidiWritten = deferred()
    const bidiFinished = deferred()
    bidi.write({ part: 1 }, () => bidiWritten.resolve())
    bidi.end(() => bidiFinished.resolve())
    await bidiWritten.promise
    await bidiFinished.promise
    expect(calls()).toBe(0)
    // And it fills as a failed call's does: write() says false at its
    // high-water mark (completed at once, it never did, and a "write until
    // full" producer spun for good).
    const full = work.clientStream(new Metadata(), withCallDeadline(spent), () => {})
    let n = 0
    while (n < 100_000 && full.write({ part: n })) n++
    expect(n).toBeLessThan(100)
  }, 2_000)

  it('a caller whose deadline was cancelled (it left) gets CANCELLED at once, with the reason', async () => {
    const { calls } = await echoServer()
    const deadline = Deadline.after(5000)
    const left = new ClientClosedError()
    deadline.cancel(left)
    const result = await runWithDeadline(deadline, () => unary(client(), {}))
    expect(result.error?.code).toBe(status.CANCELLED)
    expect(fromGrpcError(result.error)).toBe(left)
    expect(calls()).toBe(0)
  })

  it('a server-streaming call is refused the same way (an error event, then end)', async () => {
    const { calls } = await echoServer()
    const deadline = Deadline.after(0)
    const stream = runWithDeadline(deadline, () => client().serverStream({}, new Metadata(), {}))
    const error = await new Promise<ServiceError>((resolve) => stream.on('error', resolve))
    expect(error.code).toBe(status.DEADLINE_EXCEEDED)
    expect(calls()).toBe(0)
  })
})

describe('deadlineInterceptor: the call ends when the caller deadline does', () => {
  async function hangingServer() {
    const arrived = deferred()
    const cancelled = deferred()
    const unaryHandler: handleUnaryCall<unknown, unknown> = (call) => {
      call.on('cancelled', () => cancelled.resolve())
      arrived.resolve()
    }
    const serverStream: handleServerStreamingCall<unknown, unknown> = (call) => {
      call.on('cancelled', () => cancelled.resolve())
      call.write({ n: 1 })
      arrived.resolve()
    }
    server = await startServer({ unary: unaryHandler, serverStream })
    return { arrived: arrived.promise, cancelled: cancelled.promise }
  }

  it('when the caller leaves (its deadline is cancelled) the call is cancelled: CANCELLED, and the server sees it', async () => {
    const { arrived, cancelled } = await hangingServer()
    const ends = watch<GrpcClientEndMessage>(grpcChannels.clientEnd)
    const deadline = Deadline.after(10_000)
    const pending = runWithDeadline(deadline, () => unary(client(), {}))
    await arrived
    const left = new ClientClosedError()
    deadline.cancel(left)
    const result = await pending
    expect(result.error?.code).toBe(status.CANCELLED)
    expect(isClientClosed(fromGrpcError(result.error))).toBe(true)
    await cancelled
    expect(ends.messages[0]).toMatchObject({ outcome: 'cancelled', code: status.CANCELLED })
  })

  it("when the caller's deadline expires the call ends DEADLINE_EXCEEDED at once (grpc-js's own timer is not needed)", async () => {
    const { arrived, cancelled } = await hangingServer()
    const clock = new ManualClock()
    // 60 s on the manual clock: grpc-js's own (real-time) timer is far away.
    const deadline = Deadline.after(60_000, { clock })
    const pending = runWithDeadline(deadline, () => unary(client(), {}))
    await arrived
    clock.advance(60_000)
    const result = await pending
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    const reason = fromGrpcError(result.error)
    expect(isDeadlineExceeded(reason)).toBe(true)
    expect(reason).toBe(deadline.reason)
    await cancelled
  })

  it('a streaming call is cancelled too, after the messages it already received', async () => {
    const { cancelled } = await hangingServer()
    const deadline = Deadline.after(10_000)
    const stream = runWithDeadline(deadline, () => client().serverStream({}, new Metadata(), {}))
    const received: unknown[] = []
    stream.on('data', (message) => {
      received.push(message)
      deadline.cancel(new ClientClosedError())
    })
    const error = await new Promise<ServiceError>((resolve) => stream.on('error', resolve))
    expect(received).toEqual([{ n: 1 }])
    expect(error.code).toBe(status.CANCELLED)
    await cancelled
  })

  it('a caller that leaves in the same tick as its call (a cancel, sync or on a microtask, or call.cancel()) is cancelled at the server too: its handler does not run on for nobody', async () => {
    // grpc-js creates the stream it sends a few microtasks after start; a
    // cancel before that ended the call for the caller, but the request went
    // out anyway and was never reset.
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const unaryHandler: handleUnaryCall<unknown, unknown> = (call, callback) => {
      if ((call.request as { warmUp?: boolean }).warmUp) return callback(null, {})
      // Not told within a second: it ran to the end, answering a caller who had left.
      const ran = setTimeout(() => callback(null, {}), 1000)
      call.on('cancelled', () => clearTimeout(ran))
    }
    server = await startServer({ unary: unaryHandler }, [deadlineServerInterceptor()])
    const work = client()
    // Connected first: the window is there once the channel is ready.
    expect((await unary(work, { warmUp: true })).value).toEqual({})
    const left = () => new ClientClosedError()
    const sync = Deadline.after(10_000)
    const bySync = unary(work, {}, withCallDeadline(sync))
    sync.cancel(left())
    const microtask = Deadline.after(10_000)
    const byMicrotask = unary(work, {}, withCallDeadline(microtask))
    queueMicrotask(() => microtask.cancel(left()))
    const byCallCancel = new Promise<ServiceError | null>((resolve) => {
      const call = work.unary({}, new Metadata(), withCallDeadline(Deadline.after(10_000)), (e) =>
        resolve(e),
      )
      call.cancel()
    })
    const results = await Promise.all([bySync, byMicrotask, byCallCancel])
    expect(results.map((r) => (r && 'code' in r ? r.code : r?.error?.code))).toEqual([
      status.CANCELLED,
      status.CANCELLED,
      status.CANCELLED,
    ])
    // Each call reached the server (one before them: the warm-up).
    await ends.count(4)
    expect(ends.messages.slice(1).map((m) => m.outcome)).toEqual([
      'client-cancelled',
      'client-cancelled',
      'client-cancelled',
    ])
  })

  it('an interceptor after ours is asked to cancel once, whether the caller leaves in the same tick as its call or later, and the server still sees each cancel', async () => {
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const arrived: Array<() => void> = []
    const unaryHandler: handleUnaryCall<unknown, unknown> = (call, callback) => {
      if ((call.request as { warmUp?: boolean }).warmUp) return callback(null, {})
      const ran = setTimeout(() => callback(null, {}), 1000)
      call.on('cancelled', () => clearTimeout(ran))
      arrived.shift()?.()
    }
    server = await startServer({ unary: unaryHandler }, [deadlineServerInterceptor()])
    // A retry or metrics interceptor placed after ours: it counts the cancels it is asked to pass on.
    let cancels = 0
    const counting: Interceptor = (options, nextCall) =>
      new InterceptingCall(nextCall(options), {
        cancel(next) {
          cancels++
          next()
        },
      })
    const work = connect(server!.address, [deadlineInterceptor(), counting])
    clients.push(work)
    expect((await unary(work, { warmUp: true })).value).toEqual({})
    expect(cancels).toBe(0)
    const left = () => new ClientClosedError()
    /** The cancels passed on for one call, counted once it has ended and two more turns have passed (the old re-send came on the next). */
    const settledCancels = async (pending: Promise<unknown>) => {
      await pending
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
      const counted = cancels
      cancels = 0
      return counted
    }

    // The caller's deadline cancelled in the same tick as the call.
    const sameTick = Deadline.after(10_000)
    const bySameTick = unary(work, {}, withCallDeadline(sameTick))
    sameTick.cancel(left())
    expect(await settledCancels(bySameTick), 'same tick').toBe(1)

    // Cancelled once the call is running at the server.
    const later = Deadline.after(10_000)
    const running = new Promise<void>((resolve) => arrived.push(resolve))
    const byLater = unary(work, {}, withCallDeadline(later))
    await running
    later.cancel(left())
    expect(await settledCancels(byLater), 'while running').toBe(1)

    // The caller's own call.cancel(), in the same tick.
    const byCallCancel = new Promise<ServiceError | null>((resolve) => {
      const call = work.unary({}, new Metadata(), withCallDeadline(Deadline.after(10_000)), (e) =>
        resolve(e),
      )
      call.cancel()
    })
    expect(await settledCancels(byCallCancel), 'call.cancel()').toBe(1)

    // Each reached the server and was cancelled there (one before them: the warm-up).
    await ends.count(4)
    expect(ends.messages.slice(1).map((m) => m.outcome)).toEqual([
      'client-cancelled',
      'client-cancelled',
      'client-cancelled',
    ])
  })

  it('a call answered inside start by an interceptor after ours leaves no hook on a long-lived caller deadline', async () => {
    await echoServer()
    // A circuit breaker (or a cache, a mock) that answers at once, from start().
    const breaker: Interceptor = (options, nextCall) =>
      new InterceptingCall(nextCall(options), {
        start(_metadata, listener) {
          listener.onReceiveStatus({
            code: status.UNAVAILABLE,
            details: 'circuit open',
            metadata: new Metadata(),
          })
        },
      })
    const work = connect(server!.address, [deadlineInterceptor(), breaker])
    clients.push(work)
    // A deadline for the whole process (a worker's), its hooks counted.
    const parent = Deadline.never()
    const hooks = countHooks(parent)
    const CALLS = 50
    for (let i = 0; i < CALLS; i++) {
      const result = await runWithDeadline(parent, () => unary(work, {}))
      expect(result.error?.code).toBe(status.UNAVAILABLE)
    }
    expect(hooks(), 'onDone hooks left on the caller deadline').toBe(0)
  })

  it('a DEADLINE_EXCEEDED from the server reads as a DeadlineExceededError; other errors are left as they are', async () => {
    const unaryHandler: handleUnaryCall<unknown, unknown> = (call, callback) => {
      const code = (call.request as { code: number }).code
      callback({ code, details: 'from the server' })
    }
    server = await startServer({ unary: unaryHandler })
    const work = client()
    const expired = await unary(work, { code: status.DEADLINE_EXCEEDED })
    const missing = await unary(work, { code: status.NOT_FOUND })
    const reason = fromGrpcError(expired.error)
    expect(isDeadlineExceeded(reason)).toBe(true)
    expect((reason as Error).cause).toEqual({
      code: status.DEADLINE_EXCEEDED,
      details: 'from the server',
    })
    expect(fromGrpcError(missing.error)).toBe(missing.error)
    expect(fromGrpcError('not an error')).toBe('not an error')
  })
})
