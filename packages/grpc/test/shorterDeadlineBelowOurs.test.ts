import { type ServiceError, status } from '@grpc/grpc-js'
import { Deadline, isDeadlineExceeded, isExpiryOf, runWithDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { deadlineServerInterceptor, fromGrpcError } from '../src/index.js'
import { channelHarness } from './support/channelHarness.js'
import { unary, type WorkClientApi } from './support/grpc.js'

// A call can end DEADLINE_EXCEEDED well before the gRPC deadline our
// interceptor gave it: a service config's `timeout` (methodConfig), applied by
// grpc-js below the interceptors, or a server's timeout of its own answered by
// hand. That is not the caller's expiry: the caller's deadline still has its
// time. Real grpc-js server and client on 127.0.0.1.

const { serve, client } = channelHarness()

/** One call from `c` under a caller's deadline of `ms`, which must end DEADLINE_EXCEEDED. */
async function exceededCall(c: WorkClientApi, ms: number) {
  const caller = Deadline.after(ms)
  const { error } = await runWithDeadline(caller, () => unary(c, {}))
  expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
  return { caller, error, reason: fromGrpcError(error) }
}

describe("a DEADLINE_EXCEEDED well before the caller's deadline", () => {
  it("a service config timeout shorter than the caller's budget: the error is no expiry of the caller's deadline", async () => {
    const server = await serve({ unary() {} }) // never answers
    const c = client(server.address, {
      'grpc.service_config': JSON.stringify({
        methodConfig: [{ name: [{ service: 'hourglass.test.Work' }], timeout: '0.05s' }],
      }),
    })
    const { caller, reason } = await exceededCall(c, 60_000)
    expect(caller.done).toBe(false)
    expect(isDeadlineExceeded(reason)).toBe(true)
    // Taken for the caller's, an Express app answered the request 504
    // "x-deadline-expired: do not retry" 50 ms into its 60 s.
    expect(isExpiryOf(reason, caller)).toBe(false)
    caller.dispose()
  })

  it("a server's DEADLINE_EXCEEDED answered by hand for a timeout of its own (no x-deadline-expired trailer): no expiry of the caller's", async () => {
    const server = await serve({
      unary(_call: unknown, callback: (error: Partial<ServiceError>) => void) {
        callback({ code: status.DEADLINE_EXCEEDED, details: 'backend timed out' })
      },
    })
    const c = client(server.address)
    const { caller, reason } = await exceededCall(c, 60_000)
    expect(caller.done).toBe(false)
    expect(isDeadlineExceeded(reason)).toBe(true)
    expect(isExpiryOf(reason, caller)).toBe(false)
    caller.dispose()
  })

  it("a server's maxMs cap sends no trailer: no expiry of the caller's", async () => {
    const server = await serve({ unary() {} }, [
      deadlineServerInterceptor({ maxMs: 200, reserveMs: 10 }),
    ])
    const c = client(server.address)
    const { caller, error, reason } = await exceededCall(c, 60_000)
    expect(error?.metadata.get('x-deadline-expired')).toEqual([])
    expect(isExpiryOf(reason, caller)).toBe(false)
    caller.dispose()
  })

  it("the server's answer to the caller's own budget is still the caller's expiry", async () => {
    const server = await serve({ unary() {} }, [deadlineServerInterceptor({ reserveMs: 10 })])
    const c = client(server.address)
    const { caller, reason } = await exceededCall(c, 150)
    expect(isExpiryOf(reason, caller)).toBe(true)
  })
})
