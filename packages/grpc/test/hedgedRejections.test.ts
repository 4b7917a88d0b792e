import { Metadata, type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js'
import { currentDeadline, expiryError, ManualClock, wait } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadlineErrors,
  deadlineServerInterceptor,
  type GrpcServerLateWriteMessage,
  grpcChannels,
} from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  record,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

/**
 * Hedged work in a gRPC handler (`Promise.any` over two upstream calls, each
 * bounded by one deadline) rejects with an AggregateError when that deadline
 * ends both. `@hourglass/express`'s `deadlineErrors()` judges such an
 * aggregate as the one error that ended all its members, and swallows it
 * after the deadline answered (its test/deadlineErrorsAggregate.test.ts).
 * The gRPC twin answered a cap's expiry `UNKNOWN "Unknown error"` (an
 * Express edge: 500 where the same handler under Express answers 504), and
 * after the call's own deadline answered, sent a second status, reported as
 * a late write. No real time: a ManualClock ends the deadlines.
 */
type Unary = ServerUnaryCall<unknown, unknown>

let server: RunningServer | undefined
let client: WorkClientApi | undefined
afterEach(async () => {
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
})

async function hedgedCall(capMs: number | undefined, budgetMs: number) {
  const clock = new ManualClock()
  const late = record<GrpcServerLateWriteMessage>(grpcChannels.serverLateWrite)
  const started = deferred()
  const settled = deferred()
  server = await startServer(
    deadlineErrors({
      async unary(_call: Unary, callback: sendUnaryData<unknown>) {
        const deadline = currentDeadline()!
        const bound = capMs === undefined ? deadline : deadline.child(capMs)
        started.resolve()
        try {
          await Promise.any([wait(60_000, { deadline: bound }), wait(60_000, { deadline: bound })])
          callback(null, {})
        } finally {
          settled.resolve()
        }
      },
    }),
    [deadlineServerInterceptor({ clock, reserveMs: 0 })],
  )
  client = connect(server.address)
  const metadata = new Metadata()
  metadata.set('x-deadline-remaining-ms', String(budgetMs))
  const pending = unary(client, {}, {}, metadata)
  await started.promise
  clock.advance(capMs ?? budgetMs)
  const result = await pending
  await settled.promise
  // A turn more: a second status would have been reported by now.
  await new Promise((resolve) => setImmediate(resolve))
  late.stop()
  return { result, lateWrites: late.messages.map((m) => m.operation) }
}

describe('deadlineErrors: an AggregateError of hedged calls one deadline ended', () => {
  it('a cap under the call deadline that ended both calls is DEADLINE_EXCEEDED with x-deadline-expired, as one call cut by it is', async () => {
    const { result } = await hedgedCall(50, 10_000)
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.details).toMatch(/^deadline exceeded: 50 ms elapsed of a 50 ms budget/)
    expect(result.error?.metadata.get('x-deadline-expired')).toEqual(['1'])
  })

  it("after the call's own deadline answered, the aggregate is the handler noticing: no late write", async () => {
    const { result, lateWrites } = await hedgedCall(undefined, 100)
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(lateWrites).toEqual([])
  })

  it("each hedged call told the call's expiry early, an error of its own each (backends answering it within their reserve): DEADLINE_EXCEEDED with x-deadline-expired", async () => {
    server = await startServer(
      deadlineErrors({
        async unary(_call: Unary, callback: sendUnaryData<unknown>) {
          const deadline = currentDeadline()!
          await Promise.any([
            Promise.reject(expiryError(deadline)),
            Promise.reject(expiryError(deadline)),
          ])
          callback(null, {})
        },
      }),
      [deadlineServerInterceptor({ clock: new ManualClock(), reserveMs: 0 })],
    )
    client = connect(server.address)
    const metadata = new Metadata()
    metadata.set('x-deadline-remaining-ms', '10000')
    const result = await unary(client, {}, {}, metadata)
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.metadata.get('x-deadline-expired')).toEqual(['1'])
  })
})
