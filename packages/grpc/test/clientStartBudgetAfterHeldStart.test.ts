import { InterceptingCall, type Interceptor, Metadata } from '@grpc/grpc-js'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { afterEach, expect, it, vi } from 'vitest'
import type { GrpcClientStartMessage } from '../src/channels.js'
import { deadlineInterceptor, grpcChannels } from '../src/index.js'
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

// `client-start`'s `budgetMs` is "the deadline given to the call, in ms from
// now". It was measured when the call was created, not when it starts: an
// auth interceptor before ours that fetched a token for 10 s published a
// call with 20 s left as given 30 s (its header said 20 s), and
// @hourglass/otel's CLIENT span carried that budget.

let server: RunningServer | undefined
let client: WorkClientApi | undefined
let starts: Recording<GrpcClientStartMessage> | undefined

afterEach(async () => {
  vi.useRealTimers()
  starts?.stop()
  client?.close()
  await server?.close()
})

/** An interceptor whose start waits until the test releases it (a token being fetched). */
function heldStart(): { interceptor: Interceptor; reached: Promise<void>; release(): void } {
  const reached = deferred()
  const released = deferred()
  const interceptor: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        reached.resolve()
        void released.promise.then(() => next(metadata, listener))
      },
    })
  return { interceptor, reached: reached.promise, release: () => released.resolve() }
}

async function setUp(): Promise<ReturnType<typeof heldStart>> {
  server = await startServer({
    unary: (_call: unknown, callback: (error: null, value: unknown) => void) =>
      callback(null, { ok: true }),
  })
  const held = heldStart()
  client = connect(server.address, [held.interceptor, deadlineInterceptor()])
  starts = record<GrpcClientStartMessage>(grpcChannels.clientStart)
  // The wall clock, which the gRPC deadline is on, stands still unless moved.
  vi.useFakeTimers({ toFake: ['Date'] })
  return held
}

it("client-start's budgetMs is what the call has when it starts, after a hold before ours: the caller's deadline", async () => {
  const held = await setUp()
  const clock = new ManualClock()
  const deadline = Deadline.after(10_000, { clock })
  let answered: Promise<UnaryResult> | undefined
  runWithDeadline(deadline, () => {
    answered = unary(client!, {})
  })
  await held.reached
  // The token took 4 s.
  clock.advance(4_000)
  vi.setSystemTime(Date.now() + 4_000)
  held.release()
  expect((await answered!).error).toBeUndefined()
  const start = starts!.messages[0]!
  expect(start).toMatchObject({ refused: false, remainingMs: 6_000, headerMs: 6_000 })
  expect(start.budgetMs).toBe(6_000)
  deadline.dispose()
})

it("client-start's budgetMs is what the call has when it starts, after a hold before ours: defaultMs", async () => {
  const held = await setUp()
  const answered = unary(client!, {}, {}, new Metadata())
  await held.reached
  vi.setSystemTime(Date.now() + 10_000)
  held.release()
  expect((await answered).error).toBeUndefined()
  expect(starts!.messages[0]!.budgetMs).toBe(20_000)
})
