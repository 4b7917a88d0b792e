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

describe('deadlineInterceptor in dark mode', () => {
  it('sends no header within a millisecond of an observe-only deadline (a "0" made the next hop answer DEADLINE_EXCEEDED)', async () => {
    const arrivals: Arrival[] = []
    const handler: handleUnaryCall<unknown, unknown> = (call, callback) => {
      arrivals.push(arrival(call))
      callback(null, {})
    }
    server = await startServer({ unary: handler })
    work = connect(server.address, [deadlineInterceptor({ reserveMs: 0 })])
    const clock = new ManualClock()
    const observing = Deadline.after(10, { clock, observe: true })
    clock.advance(9.5)
    const result = await runWithDeadline(observing, () => unary(work!, {}))
    expect(result.error).toBeUndefined()
    expect(arrivals[0]).toEqual({ grpcMs: Number.POSITIVE_INFINITY, header: undefined })
    observing.dispose()
  })
})
