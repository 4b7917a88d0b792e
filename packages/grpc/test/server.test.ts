import {
  type handleBidiStreamingCall,
  type handleClientStreamingCall,
  type handleServerStreamingCall,
  type handleUnaryCall,
  Metadata,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import {
  currentDeadline,
  type Deadline,
  isClientClosed,
  isDeadlineExceeded,
  ManualClock,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { watchLoopStalls } from '../../../test/support/loopStalls.js'
import {
  deadlineOf,
  deadlineServerInterceptor,
  type GrpcServerEndMessage,
  type GrpcServerExpireMessage,
  type GrpcServerInvalidHeaderMessage,
  type GrpcServerLateWriteMessage,
  type GrpcServerStartMessage,
  grpcChannels,
  type ServerDeadlineOptions,
} from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  rawUnary,
  record,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

type Seen = { deadline: Deadline | undefined; same: boolean }

let server: RunningServer | undefined
let client: WorkClientApi | undefined
const recordings: Array<{ stop(): void }> = []

afterEach(async () => {
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
  for (const r of recordings.splice(0)) r.stop()
})

function watch<T>(channel: { name: string }) {
  const r = record<T>(channel)
  recordings.push(r)
  return r
}

function metadataWith(entries: Record<string, string>): Metadata {
  const metadata = new Metadata()
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value)
  return metadata
}

async function serve(
  implementation: Parameters<typeof startServer>[0],
  options: ServerDeadlineOptions = {},
): Promise<WorkClientApi> {
  server = await startServer(implementation, [deadlineServerInterceptor(options)])
  client = connect(server.address)
  return client
}

describe('deadlineServerInterceptor: the call gets one deadline', () => {
  it('a unary handler runs inside it: currentDeadline() is the grpc-timeout budget minus reserveMs, and deadlineOf(call) is the same one', async () => {
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    let seen: Seen | undefined
    const unaryHandler: handleUnaryCall<unknown, unknown> = (call, callback) => {
      // Across an await too: the context follows the work the handler starts.
      setImmediate(() => {
        const deadline = currentDeadline()
        seen = { deadline, same: deadline !== undefined && deadline === deadlineOf(call) }
        callback(null, { ok: true })
      })
    }
    // The handler's deadline on a manual clock: no ms pass between the call's
    // arrival and its deadline being made, so what it keeps back is the
    // reserve alone, however loaded the machine (the ms spent since arrival
    // coming off too: heldBeforeOurServerInterceptor.test.ts).
    const clock = new ManualClock()
    const work = await serve({ unary: unaryHandler }, { reserveMs: 10, clock })
    // 10 s of wall clock: the first call connects first, and a loaded
    // machine may take a few hundred ms over that.
    const result = await unary(work, {}, { deadline: Date.now() + 10_000 })
    expect(result).toEqual({ value: { ok: true } })
    expect(seen?.same).toBe(true)
    const start = starts.messages[0]!
    expect(start).toMatchObject({
      method: '/hourglass.test.Work/Unary',
      source: 'grpc-timeout',
      clamped: false,
      mode: 'enforce',
      refused: false,
    })
    // grpc-js sends the whole ms left when the stream opens; loopback takes a few.
    expect(start.budgetMs).toBeLessThanOrEqual(10_000)
    expect(start.budgetMs).toBeGreaterThan(8000)
    expect(start.deadline).toBe(seen?.deadline)
    expect(start.metadata.get('user-agent')[0]).toMatch(/grpc-node-js/)
    // The reserve kept back, and nothing else (no time passed on the clock).
    const kept = start.budgetMs - start.deadline.budgetMs
    expect(kept).toBe(10)
    expect(start.remainingMs).toBe(start.budgetMs - 10)
  })

  it('server-streaming, client-streaming and bidi handlers, and their stream events, run inside it too', async () => {
    const seen: Record<string, boolean> = {}
    const check = (name: string, call: { metadata: Metadata }) => {
      const deadline = currentDeadline()
      seen[name] = deadline !== undefined && deadline === deadlineOf(call)
    }
    const serverStream: handleServerStreamingCall<unknown, unknown> = (call) => {
      check('serverStream', call)
      call.write({ n: 1 })
      call.end()
    }
    const clientStream: handleClientStreamingCall<unknown, unknown> = (call, callback) => {
      check('clientStream', call)
      call.on('data', () => check('clientStream data', call))
      call.on('end', () => callback(null, { done: true }))
    }
    const bidi: handleBidiStreamingCall<unknown, unknown> = (call) => {
      check('bidi', call)
      call.on('data', (message) => {
        check('bidi data', call)
        call.write(message)
      })
      call.on('end', () => call.end())
    }
    const work = await serve({ serverStream, clientStream, bidi })
    const options = { deadline: Date.now() + 5000 }

    const streamed: unknown[] = []
    const down = work.serverStream({}, new Metadata(), options)
    down.on('data', (m) => streamed.push(m))
    await new Promise((resolve) => down.on('end', resolve))
    expect(streamed).toEqual([{ n: 1 }])

    await new Promise<void>((resolve, reject) => {
      const up = work.clientStream(new Metadata(), options, (error) =>
        error ? reject(error) : resolve(),
      )
      up.write({ a: 1 })
      up.end()
    })

    const echoed: unknown[] = []
    const both = work.bidi(new Metadata(), options)
    both.on('data', (m) => echoed.push(m))
    both.write({ b: 2 })
    both.end()
    await new Promise((resolve) => both.on('end', resolve))
    expect(echoed).toEqual([{ b: 2 }])

    expect(seen).toEqual({
      serverStream: true,
      clientStream: true,
      'clientStream data': true,
      bidi: true,
      'bidi data': true,
    })
  })
})

/**
 * The handler's `{ budgetMs }`: the call's budget, counted from its arrival.
 * Its server's deadlines are on a manual clock (`frozen`), so no ms a loaded
 * machine spends before the handler's deadline is made come off it (997 of
 * 1000 seen on the wall clock): the figure is exact. That those ms do come
 * off is heldBeforeOurServerInterceptor.test.ts's.
 */
function expectBudget(value: unknown, budgetMs: number): void {
  expect(value).toEqual({ budgetMs })
}

/** Options for a server whose deadlines are on a clock of their own that never moves. */
const frozen = (options: ServerDeadlineOptions): ServerDeadlineOptions => ({
  ...options,
  clock: new ManualClock(),
})

describe('deadlineServerInterceptor: where the budget comes from', () => {
  const echoBudget: handleUnaryCall<unknown, unknown> = (_call, callback) =>
    callback(null, { budgetMs: Math.round(currentDeadline()?.budgetMs ?? Number.NaN) })

  it('x-deadline-remaining-ms metadata counts too; the smallest trusted value wins', async () => {
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const work = await serve({ unary: echoBudget }, { reserveMs: 0 })
    await unary(
      work,
      {},
      { deadline: Date.now() + 5000 },
      metadataWith({ 'x-deadline-remaining-ms': '300' }),
    )
    // A wall-clock grpc-timeout must outlast the round trip on a loaded machine.
    await unary(
      work,
      {},
      { deadline: Date.now() + 3000 },
      metadataWith({ 'x-deadline-remaining-ms': '50000' }),
    )
    await unary(work, {}, {}, metadataWith({ 'x-envoy-expected-rq-timeout-ms': '700' }))
    expect(starts.messages.map((m) => m.source)).toEqual([
      'x-deadline-remaining-ms',
      'grpc-timeout',
      'x-envoy-expected-rq-timeout-ms',
    ])
    expect(starts.messages[0]!.budgetMs).toBe(300)
    expect(starts.messages[1]!.budgetMs).toBeLessThanOrEqual(3000)
    expect(starts.messages[2]!.budgetMs).toBe(700)
  })

  it('a budget above maxMs is cut to it; a call without one gets defaultMs; trust: [] ignores every inbound value', async () => {
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const work = await serve(
      { unary: echoBudget },
      frozen({ maxMs: 1000, defaultMs: 400, reserveMs: 0 }),
    )
    const clamped = await unary(work, {}, { deadline: Date.now() + 60_000 })
    const defaulted = await unary(work, {}, {})
    // Cut to maxMs as it arrived (uncut: ~60,000).
    expectBudget(clamped.value, 1000)
    expectBudget(defaulted.value, 400)
    expect(starts.messages.map((m) => [m.source, m.budgetMs, m.clamped])).toEqual([
      ['grpc-timeout', 1000, true],
      ['default', 400, false],
    ])

    await server?.close()
    client?.close()
    // Both inbound values are under defaultMs, so a trusted one would show;
    // the call's wall-clock deadline still outlasts a loaded round trip.
    const edge = await serve(
      { unary: echoBudget },
      frozen({ trust: [], defaultMs: 10_000, reserveMs: 0 }),
    )
    const ignored = await unary(
      edge,
      {},
      { deadline: Date.now() + 5000 },
      metadataWith({ 'x-deadline-remaining-ms': '50' }),
    )
    // The call's own gRPC deadline still ends it on the client; the server's budget is its own.
    expectBudget(ignored.value ?? ignored.error?.code, 10_000)
  })

  it('malformed deadline metadata is reported and ignored; with strict it is answered INVALID_ARGUMENT and the handler never runs', async () => {
    const invalid = watch<GrpcServerInvalidHeaderMessage>(grpcChannels.serverInvalidHeader)
    let calls = 0
    const counting: handleUnaryCall<unknown, unknown> = (_call, callback) => {
      calls++
      callback(null, { budgetMs: Math.round(currentDeadline()?.budgetMs ?? Number.NaN) })
    }
    const work = await serve({ unary: counting }, frozen({ defaultMs: 600, reserveMs: 0 }))
    const lenient = await unary(work, {}, {}, metadataWith({ 'x-deadline-remaining-ms': '-5s' }))
    expectBudget(lenient.value, 600)
    expect(invalid.messages[0]).toEqual({
      method: '/hourglass.test.Work/Unary',
      invalid: [{ header: 'x-deadline-remaining-ms', value: '-5s', reason: 'not a number' }],
    })

    await server?.close()
    client?.close()
    calls = 0
    const strict = await serve({ unary: counting }, { strict: true })
    const refused = await unary(
      strict,
      {},
      {},
      metadataWith({ 'x-deadline-remaining-ms': '1.5e3' }),
    )
    expect(refused.error?.code).toBe(status.INVALID_ARGUMENT)
    expect(refused.error?.details).toBe(
      'invalid deadline metadata: x-deadline-remaining-ms: not a number',
    )
    expect(calls).toBe(0)
  })

  it('in observe mode strict only reports: the handler runs with the budget it would have without strict', async () => {
    // It answered INVALID_ARGUMENT: a dark-mode rollout refused the very
    // calls it was measuring (deadline() refused them too, and no longer does).
    const invalid = watch<GrpcServerInvalidHeaderMessage>(grpcChannels.serverInvalidHeader)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const work = await serve(
      { unary: echoBudget },
      frozen({ strict: true, mode: 'observe', defaultMs: 600, reserveMs: 0 }),
    )
    const answered = await unary(work, {}, {}, metadataWith({ 'x-deadline-remaining-ms': '1.5e3' }))
    expectBudget(answered.value, 600)
    expect(invalid.messages).toHaveLength(1)
    expect(ends.messages.map((m) => m.outcome)).toEqual(['ok'])
  })

  it('a call strict refuses publishes its start and end like any other call: outcome refused, INVALID_ARGUMENT', async () => {
    const clock = new ManualClock()
    const invalid = watch<GrpcServerInvalidHeaderMessage>(grpcChannels.serverInvalidHeader)
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    let calls = 0
    const work = await serve(
      {
        unary: ((_call, callback) => {
          calls++
          callback(null, {})
        }) satisfies handleUnaryCall<unknown, unknown>,
      },
      { strict: true, defaultMs: 600, reserveMs: 0, clock },
    )
    const refused = await unary(work, {}, {}, metadataWith({ 'x-deadline-remaining-ms': '1.5e3' }))
    expect(refused.error?.code).toBe(status.INVALID_ARGUMENT)
    expect(calls).toBe(0)
    // Published before the status went out: the invalid-header report, then
    // the call's start and its end. A tracer gets a span for the refused
    // call, with the reason on it.
    expect(invalid.messages).toHaveLength(1)
    expect(starts.messages).toHaveLength(1)
    expect(starts.messages[0]).toMatchObject({
      method: '/hourglass.test.Work/Unary',
      budgetMs: 600,
      source: 'default',
      refused: true,
    })
    expect(ends.messages).toHaveLength(1)
    expect(ends.messages[0]).toMatchObject({
      method: '/hourglass.test.Work/Unary',
      outcome: 'refused',
      code: status.INVALID_ARGUMENT,
    })
    expect(ends.messages[0]!.deadline).toBe(starts.messages[0]!.deadline)
    expect(clock.pendingTimers).toBe(0)
  })

  it('options are checked when the interceptor is created', () => {
    expect(() => deadlineServerInterceptor({ maxMs: 0 })).toThrow(/maxMs/)
    expect(() => deadlineServerInterceptor({ defaultMs: Number.NaN })).toThrow(/defaultMs/)
    expect(() => deadlineServerInterceptor({ reserveMs: -1 })).toThrow(/reserveMs/)
    expect(() => deadlineServerInterceptor({ mode: 'loud' as never })).toThrow(/mode/)
    expect(() => deadlineServerInterceptor({ trust: ['x-timeout' as never] })).toThrow(/trust/)
  })

  it('an option it does not know (a typo) is refused when the interceptor is created, naming the one meant, as deadline() refuses one', () => {
    const typo = () => deadlineServerInterceptor({ maxMS: 5000 } as never)
    expect(typo).toThrow(TypeError)
    expect(typo).toThrow(/"maxMS" \(did you mean maxMs\?\)/)
    expect(() => deadlineServerInterceptor({ observe: true } as never)).toThrow(
      /did you mean mode: 'observe'/,
    )
    expect(() => deadlineServerInterceptor({ maxMs: 5000, clock: undefined })).not.toThrow()
  })

  it('a maxMs or defaultMs at or under the default reserve’s floor (10 ms) is refused, as deadline() refuses it: every call would be answered DEADLINE_EXCEEDED on arrival', () => {
    expect(() => deadlineServerInterceptor({ maxMs: 5 })).toThrow(
      /maxMs \(5\) must be more than the default reserveMs's floor \(10 ms\)/,
    )
    expect(() => deadlineServerInterceptor({ defaultMs: 10 })).toThrow(RangeError)
    // With a reserve of its own (0: none), a small budget is the caller's choice.
    expect(() => deadlineServerInterceptor({ maxMs: 5, reserveMs: 0 })).not.toThrow()
  })

  it('a fixed reserveMs at or above maxMs or defaultMs is refused, as deadline() refuses it: every call (or every one without a deadline) would be answered DEADLINE_EXCEEDED on arrival', () => {
    expect(() => deadlineServerInterceptor({ maxMs: 40, reserveMs: 50 })).toThrow(
      /reserveMs \(50\) must be less than maxMs \(40\)/,
    )
    expect(() => deadlineServerInterceptor({ defaultMs: 40, reserveMs: 40 })).toThrow(
      /reserveMs \(40\) must be less than defaultMs \(40\)/,
    )
    // defaultMs is cut to maxMs first: the reserve is judged against what a call gets.
    expect(() => deadlineServerInterceptor({ defaultMs: 100, maxMs: 40, reserveMs: 40 })).toThrow(
      RangeError,
    )
    expect(() => deadlineServerInterceptor({ defaultMs: 41, reserveMs: 40 })).not.toThrow()
  })
})

describe('deadlineServerInterceptor: when time runs out', () => {
  it('a call that arrives with no time left is answered DEADLINE_EXCEEDED (x-deadline-expired: 1) and the handler never runs', async () => {
    const expires = watch<GrpcServerExpireMessage>(grpcChannels.serverExpire)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    let calls = 0
    const work = await serve(
      {
        unary: ((_call, callback) => {
          calls++
          callback(null, {})
        }) satisfies handleUnaryCall<unknown, unknown>,
      },
      { reserveMs: 10 },
    )
    const result = await unary(work, {}, {}, metadataWith({ 'x-deadline-remaining-ms': '8' }))
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.metadata.get('x-deadline-expired')).toEqual(['1'])
    expect(calls).toBe(0)
    await ends.count(1)
    expect(expires.messages[0]).toMatchObject({ stage: 'arrival', action: 'status', budgetMs: 8 })
    expect(ends.messages[0]).toMatchObject({ outcome: 'expired', code: status.DEADLINE_EXCEEDED })
  })

  it('at the deadline the call is answered DEADLINE_EXCEEDED, the handler signal aborts with DeadlineExceededError, and its late answer is swallowed', async () => {
    const clock = new ManualClock()
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const late = watch<GrpcServerLateWriteMessage>(grpcChannels.serverLateWrite)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const running = deferred()
    const aborted = deferred<unknown>()
    const work = await serve(
      {
        unary: ((_call, callback) => {
          const deadline = currentDeadline()!
          deadline.signal.addEventListener('abort', () => {
            aborted.resolve(deadline.signal.reason)
            // A handler that ignores time answers anyway, a moment later.
            setImmediate(() => callback(null, { late: true }))
          })
          running.resolve()
        }) satisfies handleUnaryCall<unknown, unknown>,
      },
      { clock, reserveMs: 10 },
    )
    const pending = unary(work, {}, {}, metadataWith({ 'x-deadline-remaining-ms': '1000' }))
    await running.promise
    clock.advance(989)
    expect(starts.messages[0]!.deadline.done).toBe(false)
    clock.advance(1)
    const result = await pending
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.details).toBe(
      'deadline exceeded: 990 ms elapsed of a 990 ms budget (the 1000 ms its x-deadline-remaining-ms left when the call arrived, less 10 ms kept back to answer)',
    )
    expect(result.error?.metadata.get('x-deadline-expired')).toEqual(['1'])
    expect(isDeadlineExceeded(await aborted.promise)).toBe(true)
    await ends.count(1)
    expect(late.messages).toEqual([
      { method: '/hourglass.test.Work/Unary', operation: 'sendMessage' },
    ])
    expect(ends.messages[0]).toMatchObject({
      outcome: 'expired',
      code: status.DEADLINE_EXCEEDED,
      elapsedMs: 990,
    })
    expect(clock.pendingTimers).toBe(0)
  })

  it('a server stream keeps the messages it sent and is ended with DEADLINE_EXCEEDED', async () => {
    const clock = new ManualClock()
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const work = await serve(
      {
        serverStream: ((call) => {
          call.write({ n: 1 })
          call.write({ n: 2 })
        }) satisfies handleServerStreamingCall<unknown, unknown>,
      },
      { clock, reserveMs: 0 },
    )
    const stream = work.serverStream({}, metadataWith({ 'x-deadline-remaining-ms': '500' }), {})
    const received: unknown[] = []
    stream.on('data', (message) => {
      received.push(message)
      if (received.length === 2) clock.advance(500)
    })
    const error = await new Promise<ServiceError>((resolve) => stream.on('error', resolve))
    await starts.count(1)
    expect(received).toEqual([{ n: 1 }, { n: 2 }])
    expect(error.code).toBe(status.DEADLINE_EXCEEDED)
  })

  it('a server stream that stops and calls end() only because its deadline ended is DEADLINE_EXCEEDED, not an OK that passes the cut stream off as whole', async () => {
    const work = await serve(
      {
        serverStream: (async (call) => {
          const signal = currentDeadline()!.signal
          let n = 0
          // Backpressure: a write is always in flight while it streams, so one is when the deadline ends.
          while (!signal.aborted) {
            await new Promise((resolve) =>
              call.write({ n: n++, pad: 'x'.repeat(200_000) }, resolve),
            )
          }
          call.end()
        }) satisfies handleServerStreamingCall<unknown, unknown>,
      },
      { reserveMs: 200 },
    )
    const stream = work.serverStream({}, metadataWith({ 'x-deadline-remaining-ms': '400' }), {})
    stream.on('data', () => {})
    const ended = await new Promise<{ code: number }>((resolve) => {
      stream.on('error', resolve)
      stream.on('status', resolve)
    })
    expect(ended.code).toBe(status.DEADLINE_EXCEEDED)
  })

  it('when the client cancels, the deadline is cancelled with ClientClosedError and the call ends as client-cancelled', async () => {
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const cancelled = watch<{ method: string; elapsedMs: number }>(
      grpcChannels.serverClientCancelled,
    )
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const reason = deferred<unknown>()
    const work = await serve({
      unary: (() => {
        currentDeadline()!.onDone((why) => reason.resolve(why))
      }) satisfies handleUnaryCall<unknown, unknown>,
    })
    const call = work.unary({}, new Metadata(), { deadline: Date.now() + 10_000 }, () => {})
    await starts.count(1)
    call.cancel()
    expect(isClientClosed(await reason.promise)).toBe(true)
    await ends.count(1)
    expect(cancelled.messages).toHaveLength(1)
    expect(ends.messages[0]).toMatchObject({
      outcome: 'client-cancelled',
      code: status.CANCELLED,
    })
  })

  it('a bidi call the client cancels ends client-cancelled, and the handler is not handed the half-close the cancel sent first', async () => {
    const cancelled = watch<{ method: string; elapsedMs: number }>(
      grpcChannels.serverClientCancelled,
    )
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const reason = deferred<unknown>()
    const work = await serve({
      bidi: ((call) => {
        currentDeadline()!.onDone((why) => reason.resolve(why))
        call.on('data', (message) => call.write(message))
        // A cancelling grpc-js client half-closes before it resets the
        // stream: handed on, this `end` answered OK, too late.
        call.on('end', () => call.end())
      }) satisfies handleBidiStreamingCall<unknown, unknown>,
    })
    const stream = work.bidi(new Metadata(), { deadline: Date.now() + 10_000 })
    const seen = new Promise<number>((resolve) => stream.on('status', (s) => resolve(s.code)))
    stream.on('error', () => {}) // the CANCELLED, read from the status
    stream.once('data', () => stream.cancel())
    stream.write({ n: 1 })
    expect(await seen).toBe(status.CANCELLED)
    await ends.count(1)
    expect(ends.messages[0]).toMatchObject({
      method: '/hourglass.test.Work/Bidi',
      outcome: 'client-cancelled',
      code: status.CANCELLED,
    })
    expect(cancelled.messages).toHaveLength(1)
    expect(isClientClosed(await reason.promise)).toBe(true)
  })

  it('an upload the client cancels half-way is not handed to the handler as complete: no `end`, only `cancelled`, its deadline cancelled', async () => {
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const received = deferred()
    const reason = deferred<unknown>()
    const seen: string[] = []
    const work = await serve({
      clientStream: ((call, callback) => {
        currentDeadline()!.onDone((why) => reason.resolve(why))
        call.on('data', () => {
          seen.push('data')
          received.resolve()
        })
        // An upload handler stores what it got on `end`, as the whole upload.
        call.on('end', () => {
          seen.push('end')
          callback(null, { stored: true })
        })
        call.on('cancelled', () => seen.push('cancelled'))
      }) satisfies handleClientStreamingCall<unknown, unknown>,
    })
    const answer = deferred<ServiceError | null>()
    const upload = work.clientStream(new Metadata(), { deadline: Date.now() + 10_000 }, (error) =>
      answer.resolve(error),
    )
    upload.write({ chunk: 1 })
    await received.promise
    // A grpc-js client's cancel ends its side of the stream, then resets it.
    upload.cancel()
    expect((await answer.promise)?.code).toBe(status.CANCELLED)
    await ends.count(1)
    expect(isClientClosed(await reason.promise)).toBe(true)
    // A half-close still held would be handed on by now.
    await new Promise((resolve) => setImmediate(resolve))
    expect(seen).toEqual(['data', 'cancelled'])
    expect(ends.messages[0]).toMatchObject({ outcome: 'client-cancelled', code: status.CANCELLED })
  })

  it("a bidi handler that ends the call on the client's last message still gets `end`: the half-close that came with it is the client's, not a cancel's", async () => {
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const seen: string[] = []
    const closed = deferred()
    const work = await serve({
      bidi: ((call) => {
        call.on('data', (message: { last?: boolean }) => {
          seen.push('data')
          call.write(message)
          // The handler answers as soon as it has what it needs.
          if (message.last) call.end()
        })
        call.on('end', () => seen.push('end'))
        call.on('cancelled', () => seen.push('cancelled'))
        call.on('close', () => {
          seen.push('close')
          closed.resolve()
        })
      }) satisfies handleBidiStreamingCall<unknown, unknown>,
    })
    const stream = work.bidi(new Metadata(), { deadline: Date.now() + 10_000 })
    const answered = new Promise<number>((resolve) => stream.on('status', (s) => resolve(s.code)))
    stream.resume()
    // The client's normal end: its last message and its half-close in one write.
    stream.write({ last: true })
    stream.end()
    expect(await answered).toBe(status.OK)
    await closed.promise
    await ends.count(1)
    // Anything still held would be handed on (or dropped) by now.
    await new Promise((resolve) => setImmediate(resolve))
    expect(seen).toContain('end')
    expect(seen.indexOf('end')).toBeGreaterThan(seen.indexOf('data'))
    expect(ends.messages[0]).toMatchObject({ outcome: 'ok', code: status.OK })
  })

  it('a client-streaming handler that answers on the last message inside `for await` finishes its loop normally (no ERR_STREAM_PREMATURE_CLOSE)', async () => {
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const loop = deferred<string>()
    const work = await serve({
      clientStream: ((call, callback) => {
        const read = async () => {
          for await (const message of call as AsyncIterable<{ last?: boolean }>) {
            if (message.last) callback(null, { stored: true })
          }
        }
        // Unhandled, this rejection crashes the server process.
        read().then(
          () => loop.resolve('finished'),
          (error: { code?: string }) => loop.resolve(String(error.code)),
        )
      }) satisfies handleClientStreamingCall<unknown, unknown>,
    })
    const answer = deferred<{ error: ServiceError | null; value: unknown }>()
    const upload = work.clientStream(
      new Metadata(),
      { deadline: Date.now() + 10_000 },
      (error, value) => answer.resolve({ error, value }),
    )
    upload.write({ chunk: 1 })
    upload.write({ last: true })
    upload.end()
    expect(await answer.promise).toEqual({ error: null, value: { stored: true } })
    expect(await loop.promise).toBe('finished')
    await ends.count(1)
    expect(ends.messages[0]).toMatchObject({ outcome: 'ok', code: status.OK })
  })

  it('observe mode reports a call that would have been cut, but neither answers nor aborts', async () => {
    const clock = new ManualClock()
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const expires = watch<GrpcServerExpireMessage>(grpcChannels.serverExpire)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const work = await serve(
      {
        unary: ((_call, callback) => {
          const deadline = currentDeadline()!
          clock.advance(2000)
          callback(null, { aborted: deadline.signal.aborted })
        }) satisfies handleUnaryCall<unknown, unknown>,
      },
      { clock, mode: 'observe', reserveMs: 0 },
    )
    const result = await unary(work, {}, {}, metadataWith({ 'x-deadline-remaining-ms': '100' }))
    expect(result.value).toEqual({ aborted: false })
    await ends.count(1)
    expect(starts.messages[0]!.mode).toBe('observe')
    expect(expires.messages[0]).toMatchObject({ stage: 'handler', action: 'observed' })
    expect(ends.messages[0]).toMatchObject({ outcome: 'ok', code: status.OK })
  })

  it('observe mode: a client that cancels after the observed expiry still stops the handler, and the call ends client-cancelled', async () => {
    const clock = new ManualClock()
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const expires = watch<GrpcServerExpireMessage>(grpcChannels.serverExpire)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const reason = deferred<unknown>()
    const work = await serve(
      {
        unary: (() => {
          currentDeadline()!.onDone((why) => reason.resolve(why))
        }) satisfies handleUnaryCall<unknown, unknown>,
      },
      { clock, mode: 'observe', reserveMs: 0 },
    )
    const call = work.unary({}, metadataWith({ 'x-deadline-remaining-ms': '100' }), {}, () => {})
    await starts.count(1)
    clock.advance(150) // observed: nothing answered, nothing aborted
    await expires.count(1)
    call.cancel()
    expect(isClientClosed(await reason.promise)).toBe(true)
    await ends.count(1)
    expect(expires.messages).toHaveLength(1)
    expect(expires.messages[0]).toMatchObject({ action: 'observed' })
    expect(ends.messages[0]).toMatchObject({ outcome: 'client-cancelled', code: status.CANCELLED })
  })

  it('a call answered in time ends ok with its status, and releases its timer', async () => {
    const clock = new ManualClock()
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const work = await serve(
      {
        unary: ((_call, callback) =>
          callback({ code: status.NOT_FOUND, details: 'no such item' })) satisfies handleUnaryCall<
          unknown,
          unknown
        >,
      },
      // A fixed reserve: the adaptive one reaches its 100 ms bound on a loaded
      // box, and the 100 ms budget then arrives spent (DEADLINE_EXCEEDED).
      { clock, reserveMs: 10 },
    )
    const result = await unary(work, {}, {}, metadataWith({ 'x-deadline-remaining-ms': '100' }))
    expect(result.error?.code).toBe(status.NOT_FOUND)
    await ends.count(1)
    expect(ends.messages[0]).toMatchObject({
      method: '/hourglass.test.Work/Unary',
      outcome: 'ok',
      code: status.NOT_FOUND,
    })
    expect(clock.pendingTimers).toBe(0)
  })
})

describe('deadlineServerInterceptor: callers that are not grpc-js', () => {
  it("a raw HTTP/2 caller's grpc-timeout (any unit) is the budget", async () => {
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    await serve({
      unary: ((_call, callback) => callback(null, {})) satisfies handleUnaryCall<unknown, unknown>,
    })
    // grpc-js stamps its deadline as it takes the call, our interceptor a
    // moment later: a stall of the loop in between is taken off the budget.
    const stalls = watchLoopStalls()
    const answer = await rawUnary(server!.address, '/hourglass.test.Work/Unary', {
      'grpc-timeout': '2S',
    })
    const stalledMs = stalls.stop()
    expect(answer.status).toBe(status.OK)
    expect(starts.messages[0]).toMatchObject({ source: 'grpc-timeout', clamped: false })
    expect(starts.messages[0]!.budgetMs).toBeLessThanOrEqual(2000)
    expect(starts.messages[0]!.budgetMs).toBeGreaterThan(1900 - stalledMs)
  })

  it("with grpc-timeout not trusted, grpc-js still answers DEADLINE_EXCEEDED by it; the handler's deadline is then ended too (outcome expired)", async () => {
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const reason = deferred<unknown>()
    await serve(
      {
        unary: (() => {
          currentDeadline()!.onDone((why) => reason.resolve(why))
        }) satisfies handleUnaryCall<unknown, unknown>,
      },
      { trust: ['x-deadline-remaining-ms'], defaultMs: 10_000 },
    )
    // No timer on this caller's side: only the server can end the call.
    const answer = await rawUnary(server!.address, '/hourglass.test.Work/Unary', {
      'grpc-timeout': '50m',
    })
    expect(answer.status).toBe(status.DEADLINE_EXCEEDED)
    expect(isDeadlineExceeded(await reason.promise)).toBe(true)
    await ends.count(1)
    expect(ends.messages[0]).toMatchObject({ outcome: 'expired', code: status.DEADLINE_EXCEEDED })
  })
})
