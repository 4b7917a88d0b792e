import { type CallOptions, InterceptingCall, type Interceptor, Metadata } from '@grpc/grpc-js'
import { isDeadlineExceeded } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import type { GrpcClientEndMessage } from '../src/channels.js'
import { deadlineInterceptor, fromGrpcError, grpcChannels } from '../src/index.js'
import {
  connect,
  deferred,
  type Recording,
  type RunningServer,
  record,
  startServer,
  type UnaryResult,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// An auth interceptor after ours that fetches a token before it starts the
// call, past the call's gRPC deadline when that deadline is not the caller's
// — `defaultMs`, which ours adds to a call with no deadline, or the call's
// own `deadline` option. grpc-js's timer for it fired on a call with no
// listener yet and dropped the status (grpc/grpc-node#1985), and the call
// the interceptor then started was already over: the caller's callback was
// never called. `defaultMs` made a call that would have been answered once
// the token came hang for good.

let server: RunningServer | undefined
let client: WorkClientApi | undefined
let ends: Recording<GrpcClientEndMessage> | undefined

afterEach(async () => {
  ends?.stop()
  client?.close()
  await server?.close()
})

/** An interceptor whose start waits until the test releases it (a token being fetched). */
function heldStart(): { interceptor: Interceptor; release(): void } {
  const released = deferred()
  const interceptor: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        void released.promise.then(() => next(metadata, listener))
      },
    })
  return { interceptor, release: () => released.resolve() }
}

/** The call's answer, or `held` when none comes in 2 s (it never came, before). */
function answerOrHeld(call: Promise<UnaryResult>): Promise<UnaryResult | 'held'> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<'held'>((resolve) => {
    timer = setTimeout(() => resolve('held'), 2_000)
  })
  return Promise.race([call, bound]).finally(() => clearTimeout(timer))
}

const cases: Array<[string, () => Interceptor, () => CallOptions]> = [
  ['defaultMs', () => deadlineInterceptor({ defaultMs: 50 }), () => ({})],
  [
    "the call's own deadline option",
    () => deadlineInterceptor(),
    () => ({ deadline: Date.now() + 50 }),
  ],
]

for (const [which, ours, options] of cases) {
  it(`ours first: ${which} running out while a later interceptor holds start fails the call DEADLINE_EXCEEDED, once, never sent`, async () => {
    const arrived: unknown[] = []
    server = await startServer({
      unary: (call: unknown, callback: (error: null, value: unknown) => void) => {
        arrived.push(call)
        callback(null, { ok: true })
      },
    })
    const held = heldStart()
    client = connect(server.address, [ours(), held.interceptor])
    ends = record<GrpcClientEndMessage>(grpcChannels.clientEnd)
    let answers = 0
    const call = unary(client, {}, options(), new Metadata()).then((result) => {
      answers++
      return result
    })
    const result = await answerOrHeld(call)
    expect(result).not.toBe('held')
    const { error } = result as UnaryResult
    expect(error?.code).toBe(4) // DEADLINE_EXCEEDED
    expect(isDeadlineExceeded(fromGrpcError(error))).toBe(true)
    expect(ends.messages.map((m) => m.outcome)).toEqual(['expired'])
    const first = ends.messages[0]!.call
    // The token comes: nothing is sent for a call that is over, nor answered
    // twice. A later call on the same connection: once the server has it, the
    // first call's stream, had it been sent at the release, was opened before.
    held.release()
    // Its own generous deadline: a first connect on 2 loaded cores can take
    // longer than the 50 ms defaultMs this client adds.
    const later = await unary(client, {}, { deadline: Date.now() + 10_000 }, new Metadata())
    expect(later.error).toBeUndefined()
    expect(arrived).toHaveLength(1)
    expect(answers).toBe(1)
    expect(ends.messages.filter((m) => m.call === first)).toHaveLength(1)
  })
}

/** An interceptor that holds each answer from below (a message, the status) for `holdMs`. */
function heldAnswers(holdMs: number): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) => {
        next(metadata, {
          onReceiveMessage: (message, pass) => {
            setTimeout(() => pass(message), holdMs)
          },
          onReceiveStatus: (status, pass) => {
            setTimeout(() => pass(status), 2 * holdMs)
          },
        })
      },
    })
}

for (const [which, ours, options] of cases) {
  it(`ours first: an answer the server gave in time, held by a later interceptor past ${which}, is the answer`, async () => {
    server = await startServer({
      unary: (_call: unknown, callback: (error: null, value: unknown) => void) =>
        callback(null, { ok: true }),
    })
    client = connect(server.address, [ours(), heldAnswers(60)])
    // Connected first: the call below answers well within its 50 ms.
    await unary(client, {}, { deadline: Date.now() + 10_000 }, new Metadata())
    const result = await unary(client, {}, options(), new Metadata())
    // Its headers came up in time: grpc-js had the call, and its status is
    // the one to pass on; a status of ours at the deadline replaced it.
    expect(result.error).toBeUndefined()
    expect(result.value).toEqual({ ok: true })
  })
}
