import diagnostics from 'node:diagnostics_channel'
import {
  type CallCredentials,
  credentials,
  Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js'
import { Deadline, isDeadlineExceeded, ManualClock, runWithDeadline } from '@hourglass/core'
import { describe, expect, it, onTestFinished } from 'vitest'
import {
  deadlineServerInterceptor,
  fromGrpcError,
  type GrpcClientEndMessage,
  type GrpcServerEndMessage,
  type GrpcServerStartMessage,
  grpcChannels,
} from '../src/index.js'
import { channelHarness, countedDeadline, countHooks } from './support/channelHarness.js'
import { type Arrival, arrival, deferred, record, unary, workService } from './support/grpc.js'

// grpc-js features a user combines with the interceptors, between ours and the
// wire: call credentials that take time (a token fetch), the channel's message
// size limits, and grpc-js's own `call.getDeadline()` in a handler. Real
// grpc-js servers and clients on 127.0.0.1.

const { serve, client, closeAfter } = channelHarness()

/** Call credentials whose token comes when the test says so. */
function heldCredentials(): { creds: CallCredentials; asked: Promise<void>; release: () => void } {
  const asked = deferred()
  const released = deferred()
  const creds = credentials.createFromMetadataGenerator((_params, callback) => {
    asked.resolve()
    void released.promise.then(() => {
      const metadata = new Metadata()
      metadata.set('authorization', 'Bearer token')
      callback(null, metadata)
    })
  })
  return { creds, asked: asked.promise, release: () => released.resolve() }
}

/**
 * The wall clock and the budget as the server made each call's deadline (its
 * server-start is published then). grpc-js's deadline (wall clock) and ours
 * (performance.now()) are compared at that one instant: each read again in
 * the handler, after the call's metadata, message and half-close, the host
 * stepping its wall clock in between (a CI run saw the two clocks part by
 * 11 ms) moved one and not the other.
 */
function deadlinesMade(): Array<{ wallMs: number; budgetMs: number }> {
  const made: Array<{ wallMs: number; budgetMs: number }> = []
  const onStart = (message: unknown) => {
    const { deadline } = message as GrpcServerStartMessage
    made.push({ wallMs: Date.now(), budgetMs: deadline.budgetMs })
  }
  diagnostics.subscribe(grpcChannels.serverStart.name, onStart)
  onTestFinished(() => {
    diagnostics.unsubscribe(grpcChannels.serverStart.name, onStart)
  })
  return made
}

/** grpc-js's deadline for a server call, in epoch ms (its wall clock). */
function grpcEndMs(call: ServerUnaryCall<unknown, unknown>): number {
  const at = call.getDeadline()
  return at instanceof Date ? at.getTime() : at
}

describe('deadlineInterceptor with call credentials that take time', () => {
  it('grpc-timeout is computed after them; the header is what was left at start, and a server on the default trust takes the smaller', async () => {
    const seen = deferred<{ arrival: Arrival; grpcEndMs: number; authorization: unknown }>()
    const made = deadlinesMade()
    const server = await serve(
      {
        unary(call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) {
          seen.resolve({
            arrival: arrival(call),
            grpcEndMs: grpcEndMs(call),
            authorization: call.metadata.get('authorization')[0],
          })
          callback(null, 'ok')
        },
      },
      [deadlineServerInterceptor({ reserveMs: 10 })],
    )
    const c = client(server.address)
    const { creds, asked, release } = heldCredentials()
    const { deadline, held } = countedDeadline(5_000)
    const answer = runWithDeadline(deadline, () => unary(c, {}, { credentials: creds }))
    await asked
    // The token fetch takes a while: the caller's budget runs on meanwhile.
    // grpc-js computes grpc-timeout from its Date deadline and `Date.now()`,
    // the server reads it back the same way; the caller's budget runs on
    // `performance.now()`. The two clocks can part by a few ms within a test
    // when the host steps its wall clock (a CI run saw grpc-timeout 11 ms
    // above `leftAtRelease`). So the token takes 150 ms, and "computed after
    // them" is told from "before" (≥ 150 ms more) with a 50 ms margin.
    const tokenMs = 150
    const marginMs = 50
    const leftBefore = deadline.remaining()
    // A timer for most of it (a loop of immediates held a core for 150 ms
    // that three other workers share), then turns until it is all spent.
    await new Promise<void>((resolve) => setTimeout(resolve, tokenMs - 5))
    await new Promise<void>((resolve) => {
      const wait = () =>
        deadline.remaining() < leftBefore - tokenMs ? resolve() : setImmediate(wait)
      wait()
    })
    const leftAtRelease = deadline.remaining()
    release()
    const { value, error } = await answer
    expect(error).toBeUndefined()
    expect(value).toBe('ok')
    const { arrival: at, grpcEndMs: grpcEnd, authorization } = await seen.promise
    expect(authorization).toBe('Bearer token')
    // grpc-timeout: what was left once the credentials were in (rounded up).
    expect(at.grpcMs).toBeLessThanOrEqual(Math.ceil(leftAtRelease) + marginMs)
    // The header: what was left at start, before the credentials.
    expect(Number(at.header)).toBeGreaterThanOrEqual(Math.floor(leftBefore))
    expect(Number(at.header)).toBeGreaterThan(at.grpcMs + tokenMs - marginMs)
    // The server's deadline follows the smaller (grpc-timeout), not the
    // header (≥ tokenMs more): both as it was made (see deadlinesMade). With
    // the margin, not its 10 ms reserve: the wall clock is read when the
    // start is published, after the deadline was made, and a stall between
    // the two (25 ms in a run with four workers and other jobs on two cores)
    // is no budget taken from the header.
    expect(made).toHaveLength(1)
    expect(made[0]!.budgetMs).toBeLessThan(grpcEnd - made[0]!.wallMs + marginMs)
    expect(held()).toBe(0)
  })

  it("a call whose credentials are still pending when the caller's deadline ends fails DEADLINE_EXCEEDED, is never sent, and releases its hook", async () => {
    let arrived = 0
    const server = await serve({
      unary(_call: unknown, callback: sendUnaryData<unknown>) {
        arrived++
        callback(null, 'ok')
      },
    })
    const c = client(server.address)
    const { creds, asked, release } = heldCredentials()
    // On a clock the test moves, ended once grpc-js is fetching the token: a
    // 50 ms deadline on the real one could run (almost) out before the call
    // started, on a box that stalled there, and the call was then refused at
    // start (`minBudgetMs`), its credentials never asked for.
    const clock = new ManualClock()
    const deadline = Deadline.after(5_000, { clock })
    const held = countHooks(deadline)
    const answer = runWithDeadline(deadline, () => unary(c, {}, { credentials: creds }))
    await asked
    clock.advance(5_000)
    const { error } = await answer
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(deadline.done).toBe(true)
    expect(isDeadlineExceeded(fromGrpcError(error))).toBe(true)
    expect(held()).toBe(0)
    // The token comes late: grpc-js drops it, the call stays unsent.
    release()
    const after = await unary(c, {})
    expect(after.value).toBe('ok')
    expect(arrived).toBe(1)
  })
})

describe('the channel message size limits', () => {
  it("an answer over the client's grpc.max_receive_message_length is RESOURCE_EXHAUSTED as it is, reported error, not an expiry", async () => {
    const ends = record<GrpcClientEndMessage>(grpcChannels.clientEnd)
    try {
      const server = await serve({
        unary(_call: unknown, callback: sendUnaryData<unknown>) {
          callback(null, 'x'.repeat(1_000))
        },
      })
      const c = client(server.address, { 'grpc.max_receive_message_length': 100 })
      const { deadline, held } = countedDeadline(5_000)
      const { error } = await runWithDeadline(deadline, () => unary(c, {}))
      expect(error?.code).toBe(status.RESOURCE_EXHAUSTED)
      expect(fromGrpcError(error)).toBe(error)
      expect(deadline.done).toBe(false)
      await ends.count(1)
      expect(ends.messages[0]).toMatchObject({ code: status.RESOURCE_EXHAUSTED, outcome: 'error' })
      expect(held()).toBe(0)
    } finally {
      ends.stop()
    }
  })

  it("a request over the server's grpc.max_receive_message_length: the client gets RESOURCE_EXHAUSTED, the server call is reported client-cancelled (Limits)", async () => {
    const serverEnds = record<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const disposed: boolean[] = []
    const onStart = (message: unknown) => {
      const { deadline } = message as { deadline: Deadline }
      deadline.onDone(() => disposed.push(true))
    }
    diagnostics.subscribe(grpcChannels.serverStart.name, onStart)
    try {
      let handled = 0
      // grpc-js reads `grpc.max_receive_message_length` from the Server's options.
      const limited = new Server({
        interceptors: [deadlineServerInterceptor({ reserveMs: 10 })],
        'grpc.max_receive_message_length': 100,
      })
      limited.addService(workService, {
        unary(_call: unknown, callback: sendUnaryData<unknown>) {
          handled++
          callback(null, 'ok')
        },
      })
      const port = await new Promise<number>((resolve, reject) =>
        limited.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) =>
          e ? reject(e) : resolve(p),
        ),
      )
      closeAfter(() => limited.forceShutdown())
      const c = client(`127.0.0.1:${port}`)
      const { deadline, held } = countedDeadline(5_000)
      const { error } = await runWithDeadline(deadline, () => unary(c, { pad: 'x'.repeat(1_000) }))
      expect(error?.code).toBe(status.RESOURCE_EXHAUSTED)
      expect(held()).toBe(0)
      await serverEnds.count(1)
      expect(handled).toBe(0)
      // grpc-js answers it itself, past the interceptors, then tells them the
      // call was cancelled: the handler's deadline is ended and released.
      expect(serverEnds.messages[0]).toMatchObject({ outcome: 'client-cancelled' })
      expect(disposed).toEqual([true])
    } finally {
      diagnostics.unsubscribe(grpcChannels.serverStart.name, onStart)
      serverEnds.stop()
    }
  })
})

describe("a handler reading grpc-js's call.getDeadline() next to currentDeadline()", () => {
  /** What was left of each, as the server made the call's deadline (see deadlinesMade). */
  async function readBoth(
    maxMs: number,
    callerMs: number,
  ): Promise<{ grpcLeft: number; oursLeft: number }> {
    const seen = deferred<{ grpcLeft: number; oursLeft: number }>()
    const made = deadlinesMade()
    const server = await serve(
      {
        unary(call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) {
          const { wallMs, budgetMs } = made[0]!
          seen.resolve({ grpcLeft: grpcEndMs(call) - wallMs, oursLeft: budgetMs })
          callback(null, 'ok')
        },
      },
      [deadlineServerInterceptor({ reserveMs: 10, maxMs })],
    )
    const c = client(server.address)
    const { error } = await runWithDeadline(Deadline.after(callerMs), () => unary(c, {}))
    expect(error).toBeUndefined()
    return seen.promise
  }

  it('ours ends reserveMs before the grpc-timeout grpc-js keeps', async () => {
    const { grpcLeft, oursLeft } = await readBoth(30_000, 5_000)
    // grpc-js's is whole ms of Date.now(), ours fractions of the deadline's
    // clock, each rounded its own way: 2 ms of slack (seen 1.27 over 1 ms,
    // both read in the handler).
    expect(oursLeft).toBeLessThanOrEqual(grpcLeft - 10 + 2)
    expect(oursLeft).toBeGreaterThan(grpcLeft - 100)
  })

  it('a budget cut to maxMs: ours is the cut, getDeadline() still the caller’s', async () => {
    const { grpcLeft, oursLeft } = await readBoth(1_000, 20_000)
    expect(oursLeft).toBeLessThanOrEqual(1_000 - 10)
    expect(grpcLeft).toBeGreaterThan(10_000)
  })
})
