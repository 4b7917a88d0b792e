import { Metadata, type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js'
import { currentDeadline, Deadline, runWithDeadline } from '@hourglass/core'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import {
  deadlineInterceptor,
  deadlineServerInterceptor,
  type GrpcClientStartMessage,
  type GrpcServerEndMessage,
  grpcChannels,
} from '../src/index.js'
import {
  connect,
  type RunningServer,
  record,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// An ingress disposes its deadline when its call or request is over
// (released, not aborted), so work the handler leaves running on purpose
// after answering goes on. Such a deadline no longer expires: a call made
// under it had no deadline of the caller's — and was not given `defaultMs`
// either, as a caller's `Deadline.never()` is not. Against a server that
// never answers it stayed pending for good: the hang `defaultMs` is there to
// prevent. It is no caller's choice of "no deadline" (that is a deadline
// made without an expiry), so it gets `defaultMs`, as a call with no
// deadline at all does.

const servers: RunningServer[] = []
const clients: WorkClientApi[] = []

afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  for (const s of servers.splice(0)) await s.close()
})

/** A server that never answers, and a client with a short `defaultMs`. */
async function silentBackend(): Promise<WorkClientApi> {
  const silent = await startServer({ unary: () => {}, clientStream: () => {} })
  servers.push(silent)
  const backend = connect(silent.address, [deadlineInterceptor({ defaultMs: 100 })])
  clients.push(backend)
  return backend
}

function starts() {
  const r = record<GrpcClientStartMessage>(grpcChannels.clientStart)
  onTestFinished(() => r.stop())
  return r
}

describe('a call made under a deadline disposed while live (its call or request is over)', () => {
  it('gets defaultMs, as a call with no deadline does: it ends DEADLINE_EXCEEDED instead of waiting for good', async () => {
    const backend = await silentBackend()
    const started = starts()
    const released = Deadline.after(60_000)
    released.dispose()
    const { error } = await runWithDeadline(released, () => unary(backend, {}))
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(started.messages[0]?.budgetMs).toBeLessThanOrEqual(100)
    expect(started.messages[0]?.headerMs).toBeUndefined()
  })

  it('work a gRPC handler leaves running after it answered: its call is bounded by defaultMs', async () => {
    const backend = await silentBackend()
    let handlerDeadline: Deadline | undefined
    const front = await startServer(
      {
        unary: (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
          handlerDeadline = currentDeadline()
          callback(null, 'answered')
        },
      },
      [deadlineServerInterceptor()],
    )
    servers.push(front)
    const client = connect(front.address, [deadlineInterceptor()])
    clients.push(client)
    const ended = record<GrpcServerEndMessage>(grpcChannels.serverEnd)
    onTestFinished(() => ended.stop())
    expect((await unary(client, {})).value).toBe('answered')
    await ended.count(1)
    // The call is over: its deadline was released. What the handler left
    // running calls on under it.
    expect(handlerDeadline?.expiresAt).toBe(Number.POSITIVE_INFINITY)
    const started = starts()
    const { error } = await runWithDeadline(handlerDeadline!, () => unary(backend, {}))
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(started.messages[0]?.budgetMs).toBeLessThanOrEqual(100)
  })

  it("a caller's Deadline.never() still exempts its call: no gRPC deadline, as before", async () => {
    const backend = await silentBackend()
    const started = starts()
    const never = Deadline.never()
    const call = runWithDeadline(never, () => backend.unary({}, new Metadata(), {}, () => {}))
    onTestFinished(() => call.cancel())
    await started.count(1)
    expect(started.messages[0]?.budgetMs).toBe(Number.POSITIVE_INFINITY)
  })
})
