import {
  type Metadata,
  ServerInterceptingCall,
  type ServerInterceptor,
  status,
} from '@grpc/grpc-js'
import { currentDeadline, ManualClock } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { watchLoopStalls } from '../../../test/support/loopStalls.js'
import { deadlineServerInterceptor } from '../src/index.js'
import { deferred, type RunningServer, rawUnary, startServer } from './support/grpc.js'

// An async interceptor before ours (an auth check) holds the metadata for a
// while. Relative deadline metadata was read when it reached ours, as if
// just sent: after a 250 ms check, `x-deadline-remaining-ms: 400` still gave
// the handler 400 ms, and its caller waited 650 for its DEADLINE_EXCEEDED.
// Every budget counts from the call's arrival.

let server: RunningServer | undefined

afterEach(async () => {
  await server?.close()
})

/** A server interceptor that holds the inbound metadata until the test releases it. */
function heldMetadata(): {
  interceptor: ServerInterceptor
  reached: Promise<void>
  release(): void
} {
  const reached = deferred()
  const released = deferred()
  const interceptor: ServerInterceptor = (_method, call) =>
    new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata: Metadata, pass: (metadata: Metadata) => void) => {
            reached.resolve()
            void released.promise.then(() => pass(metadata))
          },
        }),
    })
  return { interceptor, reached: reached.promise, release: () => released.resolve() }
}

/** What the handler has left when it runs, for a call sent `headers` and held 250 ms before ours. */
async function leftAfterHeld(
  headers: Record<string, string>,
  options: { defaultMs?: number } = {},
): Promise<number | undefined> {
  const clock = new ManualClock()
  const hold = heldMetadata()
  let left: number | undefined
  server = await startServer(
    {
      unary: (_call: unknown, callback: (error: null, value: unknown) => void) => {
        left = currentDeadline()?.remaining()
        callback(null, {})
      },
    },
    [
      hold.interceptor,
      deadlineServerInterceptor({ clock, reserveMs: 0, maxMs: 10_000, ...options }),
    ],
  )
  const answer = rawUnary(server.address, '/hourglass.test.Work/Unary', headers)
  await hold.reached
  clock.advance(250) // the auth check
  hold.release()
  expect((await answer).status).toBe(status.OK)
  return left
}

it('x-deadline-remaining-ms counts from when the call arrived, not from when our interceptor reads it', async () => {
  expect(await leftAfterHeld({ 'x-deadline-remaining-ms': '400' })).toBe(150)
})

it('x-envoy-expected-rq-timeout-ms counts from when the call arrived', async () => {
  expect(await leftAfterHeld({ 'x-envoy-expected-rq-timeout-ms': '400' })).toBe(150)
})

it('defaultMs counts from when the call arrived', async () => {
  expect(await leftAfterHeld({}, { defaultMs: 400 })).toBe(150)
})

it('grpc-timeout counts from when the call arrived too, on the deadline’s clock', async () => {
  const stalls = watchLoopStalls()
  const left = await leftAfterHeld({ 'grpc-timeout': '400m' })
  const stalledMs = stalls.stop()
  // grpc-js's deadline is on the wall clock, stamped when it took the call,
  // a little before our interceptor stamps the arrival: read as of arrival,
  // within what a loaded machine puts between the two (a 1 ms bound failed
  // under load; 50 ms is a few deschedulings on four workers sharing two
  // cores). Read as if just sent, it would be 400; the hold counted twice, -100.
  expect(left).toBeGreaterThanOrEqual(100 - stalledMs)
  expect(left).toBeLessThanOrEqual(150)
})

// The held time was taken off the handler's budget but left out of the
// DEADLINE_EXCEEDED details: "150 ms elapsed of a 150 ms budget (the 400 ms
// its x-deadline-remaining-ms left when the call arrived)" — 250 ms the
// caller cannot find, and an operator blamed the handler for the auth check.
it('DEADLINE_EXCEEDED details count the time it was held before our interceptor', async () => {
  const clock = new ManualClock()
  const hold = heldMetadata()
  const running = deferred()
  server = await startServer({ unary: () => running.resolve() }, [
    hold.interceptor,
    deadlineServerInterceptor({ clock, reserveMs: 0, maxMs: 10_000 }),
  ])
  const answer = rawUnary(server.address, '/hourglass.test.Work/Unary', {
    'x-deadline-remaining-ms': '400',
  })
  await hold.reached
  clock.advance(250) // the auth check
  hold.release()
  await running.promise
  clock.advance(150)
  expect(await answer).toEqual({
    status: status.DEADLINE_EXCEEDED,
    message:
      'deadline exceeded: 150 ms elapsed of a 150 ms budget (the 400 ms its x-deadline-remaining-ms left when the call arrived, less 250 ms it waited before reaching this interceptor)',
  })
})

// Time that passes while nothing holds the call — a first call's module
// loading, an interceptor before ours that passes the metadata on in the same
// turn — is no wait: a call no interceptor held was told "less 4 ms it
// waited before reaching this interceptor", sending an operator after an
// auth check that is not there. Those ms are still off the budget, and named.
it('a call passed on in the turn it arrived is not said to have waited, its ms still accounted for', async () => {
  const clock = new ManualClock()
  const running = deferred()
  const slowInTurn: ServerInterceptor = (_method, call) =>
    new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata: Metadata, pass: (metadata: Metadata) => void) => {
            clock.advance(30) // synchronous work, no hold
            pass(metadata)
          },
        }),
    })
  server = await startServer({ unary: () => running.resolve() }, [
    slowInTurn,
    deadlineServerInterceptor({ clock, reserveMs: 0, maxMs: 10_000 }),
  ])
  const answer = rawUnary(server.address, '/hourglass.test.Work/Unary', {
    'x-deadline-remaining-ms': '400',
  })
  await running.promise
  clock.advance(370)
  const { message } = await answer
  // Still taken off the budget, and accounted for: the figures add up.
  expect(message).toBe(
    'deadline exceeded: 370 ms elapsed of a 370 ms budget (the 400 ms its x-deadline-remaining-ms left when the call arrived, less 30 ms between its arrival and this interceptor)',
  )
})
