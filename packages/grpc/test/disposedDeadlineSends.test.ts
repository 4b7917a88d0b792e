import type { handleUnaryCall } from '@grpc/grpc-js'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'
import {
  type Arrival,
  arrival,
  connect,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

let server: RunningServer | undefined
let work: WorkClientApi | undefined
afterEach(async () => {
  work?.close()
  await server?.close()
})

/**
 * A handler disposes its deadline to go on after answering (the server
 * interceptor's own end does the same): it never expires after that, and
 * reads as a deadline that never does. The client still read its old
 * expiry: past it, a call was "not sent, no budget left" (status 4). It is
 * sent as a call with no deadline at all: with no header, under the
 * client's `defaultMs` (see releasedDeadlineDefault.test.ts).
 */
describe('deadlineInterceptor under a deadline disposed while live', () => {
  it("sends past its old expiry, with no header, under the client's defaultMs", async () => {
    const arrivals: Arrival[] = []
    const handler: handleUnaryCall<unknown, unknown> = (call, callback) => {
      arrivals.push(arrival(call))
      callback(null, {})
    }
    server = await startServer({ unary: handler })
    work = connect(server.address, [deadlineInterceptor({ reserveMs: 0 })])
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    deadline.dispose()
    clock.advance(200)
    const result = await runWithDeadline(deadline, () => unary(work!, {}))
    expect(result.error).toBeUndefined()
    expect(arrivals[0]?.header).toBeUndefined()
    // The default 30 s, not the old 100 ms expiry (nor none at all).
    expect(arrivals[0]?.grpcMs).toBeGreaterThan(1000)
    expect(arrivals[0]?.grpcMs).toBeLessThanOrEqual(30_000)
  })
})
