import {
  type handleUnaryCall,
  Metadata,
  propagate,
  type ServerUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js'
import { afterEach, expect, it } from 'vitest'
import { deadlineInterceptor, type GrpcClientStartMessage, grpcChannels } from '../src/index.js'
import {
  connect,
  type RunningServer,
  record,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// grpc-node's own way to carry a deadline to a backend is the `parent`
// call option: grpc-js gives the call below the smaller of its deadline and
// its parent's (`propagate.DEADLINE`, in the default flags). A handler that
// calls on with `{ parent: call }` and no Hourglass deadline current (a
// server without deadlineServerInterceptor, or a callback that lost the
// async context) has a deadline all the same. It was taken for a call with
// none and given `defaultMs` (30 s) over its parent's: a parent with 60 s
// had its child cut at 30 s.

const servers: RunningServer[] = []
const clients: WorkClientApi[] = []
const recordings: Array<{ stop(): void }> = []

afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  for (const s of servers.splice(0)) await s.close()
  for (const r of recordings.splice(0)) r.stop()
})

const msLeft = (call: ServerUnaryCall<unknown, unknown>): number => {
  const at = call.getDeadline()
  return (at instanceof Date ? at.getTime() : at) - Date.now()
}

/** backend ← (deadlineInterceptor({ defaultMs: 1000 }), parent: call) ← front ← caller (deadline: 60 s) */
async function chain(options: { propagate_flags?: number; callerDeadlineMs?: number }) {
  const seen: number[] = []
  const backendUnary: handleUnaryCall<unknown, unknown> = (call, callback) => {
    seen.push(msLeft(call))
    callback(null, {})
  }
  const backend = await startServer({ unary: backendUnary })
  servers.push(backend)
  const toBackend = connect(backend.address, [deadlineInterceptor({ defaultMs: 1000 })])
  clients.push(toBackend)
  const frontUnary: handleUnaryCall<unknown, unknown> = (call, callback) => {
    const callOptions =
      options.propagate_flags === undefined
        ? { parent: call }
        : { parent: call, propagate_flags: options.propagate_flags }
    toBackend.unary({}, new Metadata(), callOptions, (error: ServiceError | null) =>
      callback(error, {}),
    )
  }
  const front = await startServer({ unary: frontUnary })
  servers.push(front)
  const caller = connect(front.address)
  clients.push(caller)
  const callerOptions =
    options.callerDeadlineMs === undefined
      ? {}
      : { deadline: Date.now() + options.callerDeadlineMs }
  const result = await unary(caller, {}, callerOptions)
  return { result, seen }
}

it("a child call given its parent (the default propagate flags) keeps the parent's deadline, not defaultMs", async () => {
  const starts = record<GrpcClientStartMessage>(grpcChannels.clientStart)
  recordings.push(starts)
  const { result, seen } = await chain({ callerDeadlineMs: 60_000 })
  expect(result.error).toBeUndefined()
  // The parent's 60 s (less the trip), not the interceptor's 1 s default.
  expect(seen[0]).toBeGreaterThan(50_000)
  expect(starts.messages[0]?.budgetMs).toBeGreaterThan(50_000)
})

it('a parent whose deadline is not propagated (flags without DEADLINE) leaves the child to defaultMs', async () => {
  const { result, seen } = await chain({
    callerDeadlineMs: 60_000,
    propagate_flags: propagate.DEFAULTS & ~propagate.DEADLINE,
  })
  expect(result.error).toBeUndefined()
  expect(seen[0]).toBeLessThanOrEqual(1000)
})

it('a parent with no deadline leaves the child to defaultMs', async () => {
  const { result, seen } = await chain({})
  expect(result.error).toBeUndefined()
  expect(seen[0]).toBeLessThanOrEqual(1000)
})
