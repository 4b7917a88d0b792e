import { InterceptingCall, type Interceptor, type StatusObject, status } from '@grpc/grpc-js'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { deadlineInterceptor, fromGrpcError } from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// The interceptor gives a call the caller's deadline as its gRPC deadline, and
// grpc-js arms its own whole-ms timer for it, which may fire a little before
// the caller's deadline does (core's never fires early). The call then failed
// while the caller's deadline was still live: a BullMQ job whose deadline
// ended its gRPC call was failed as an ordinary error, not deadline_exceeded,
// for about one job in five. Here the caller's deadline is on a ManualClock,
// left a hair short of its end when grpc-js's timer fires.

let server: RunningServer | undefined
let client: WorkClientApi | undefined

afterEach(async () => {
  client?.close()
  await server?.close()
})

/** An interceptor that records the status it is handed: placed inside ours, it sees what grpc-js delivers; outside, what ours passes on. */
function statusSpy(): { interceptor: Interceptor; seen: Promise<StatusObject>; saw(): boolean } {
  const seen = deferred<StatusObject>()
  let saw = false
  const interceptor: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) =>
        next(metadata, {
          onReceiveStatus: (ended, pass) => {
            saw = true
            seen.resolve(ended)
            pass(ended)
          },
        }),
    })
  return { interceptor, seen: seen.promise, saw: () => saw }
}

it("a call that grpc-js's own timer ends a hair before the caller's deadline fails once that deadline has ended, with its reason", async () => {
  server = await startServer({ unary: () => {} }) // never answers
  const fromGrpcJs = statusSpy()
  const toCaller = statusSpy()
  client = connect(server.address, [
    toCaller.interceptor,
    deadlineInterceptor(),
    fromGrpcJs.interceptor,
  ])
  const clock = new ManualClock()
  const deadline = Deadline.after(60, { clock })
  let doneWhenFailed: boolean | undefined
  const failed = runWithDeadline(deadline, () => unary(client!, {})).then((r) => {
    doneWhenFailed = deadline.done
    return r
  })
  clock.advance(58) // 2 ms left on the caller's deadline when grpc-js's 60 ms timer fires

  expect((await fromGrpcJs.seen).code).toBe(status.DEADLINE_EXCEEDED)
  expect(toCaller.saw()).toBe(false) // held while the caller's deadline is live

  clock.advance(2) // the caller's deadline ends
  expect(toCaller.saw()).toBe(true)
  const result = await failed
  expect(doneWhenFailed).toBe(true)
  expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
  expect(fromGrpcError(result.error)).toBe(deadline.reason)
})

it("a DEADLINE_EXCEEDED well before the caller's deadline (the server's own) is delivered at once", async () => {
  server = await startServer({
    unary: (_call: unknown, callback: (error: unknown) => void) =>
      callback({ code: status.DEADLINE_EXCEEDED, details: 'downstream ran out' }),
  })
  client = connect(server.address, [deadlineInterceptor()])
  const deadline = Deadline.after(60_000, { clock: new ManualClock() })
  const result = await runWithDeadline(deadline, () => unary(client!, {}))
  expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
  expect(result.error?.details).toBe('downstream ran out')
  expect(deadline.done).toBe(false)
})
