import { Metadata, status } from '@grpc/grpc-js'
import { Deadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadlineInterceptor,
  deadlineServerInterceptor,
  type GrpcClientStartMessage,
  grpcChannels,
  withCallDeadline,
} from '../src/index.js'
import {
  connect,
  type Recording,
  type RunningServer,
  record,
  startServer,
  type WorkClientApi,
} from './support/grpc.js'

const servers: RunningServer[] = []
const clients: WorkClientApi[] = []
const recordings: Recording<unknown>[] = []

interface ChainOptions {
  /** The inbound stream the outbound call is made under. */
  kind?: 'serverStream' | 'bidi'
  /** The server interceptor's mode on that stream. */
  mode?: 'enforce' | 'observe'
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  for (const s of servers.splice(0)) await s.close()
  for (const r of recordings.splice(0)) r.stop()
})

/**
 * A server stream that came with no deadline (a watch) runs under a deadline
 * with no expiry, there only to carry the client's cancel. A unary call its
 * handler makes must still get the client interceptor's `defaultMs`, as it
 * would anywhere else without a deadline: taken for a caller's deliberate
 * `Deadline.never()`, it went out with no gRPC deadline and waited on a
 * stuck backend for as long as the watch lived.
 */
describe('a unary call made from a server stream that has no deadline', () => {
  async function chain(
    outbound: (toC: WorkClientApi) => Promise<unknown>,
    { kind = 'serverStream', mode = 'enforce' }: ChainOptions = {},
  ) {
    const stuck = await startServer({ unary: () => {} }, [deadlineServerInterceptor()])
    servers.push(stuck)
    const toC = connect(stuck.address, [deadlineInterceptor({ defaultMs: 300 })])
    clients.push(toC)
    let result: unknown
    const handler = async (call: { end(): void }) => {
      result = await outbound(toC)
      call.end()
    }
    const watch = await startServer({ [kind]: handler }, [deadlineServerInterceptor({ mode })])
    servers.push(watch)
    const toB = connect(watch.address)
    clients.push(toB)
    await new Promise<void>((resolve) => {
      const stream =
        kind === 'bidi' ? toB.bidi(new Metadata(), {}) : toB.serverStream({}, new Metadata(), {})
      stream.on('data', () => {})
      stream.on('status', () => resolve())
    })
    return result
  }

  const unaryCall = (toC: WorkClientApi, options = {}) =>
    new Promise<number | undefined>((resolve) =>
      toC.unary({}, new Metadata(), options, (error) => resolve(error?.code)),
    )

  it('gets defaultMs as its gRPC deadline, and ends DEADLINE_EXCEEDED against a server that never answers', async () => {
    const starts = record<GrpcClientStartMessage>(grpcChannels.clientStart)
    recordings.push(starts as Recording<unknown>)
    const code = await chain((toC) => unaryCall(toC))
    expect(code).toBe(status.DEADLINE_EXCEEDED)
    expect(starts.messages[0]!.budgetMs).toBeLessThanOrEqual(300)
    expect(starts.messages[0]!.headerMs).toBeUndefined()
  })

  it('an explicit Deadline.never() given with withCallDeadline still exempts the call', async () => {
    const starts = record<GrpcClientStartMessage>(grpcChannels.clientStart)
    recordings.push(starts as Recording<unknown>)
    await chain((toC) => {
      const call = toC.unary({}, new Metadata(), withCallDeadline(Deadline.never()), () => {})
      const sent = starts.messages[0]?.budgetMs
      call.cancel()
      return Promise.resolve(sent)
    })
    expect(starts.messages[0]!.budgetMs).toBe(Number.POSITIVE_INFINITY)
  })

  it('made from a bidi stream that has no deadline, it gets defaultMs too', async () => {
    const starts = record<GrpcClientStartMessage>(grpcChannels.clientStart)
    recordings.push(starts as Recording<unknown>)
    const code = await chain((toC) => unaryCall(toC), { kind: 'bidi' })
    expect(code).toBe(status.DEADLINE_EXCEEDED)
    expect(starts.messages[0]!.budgetMs).toBeLessThanOrEqual(300)
  })

  // Dark mode changes no outcome: the stream's observe-only deadline adds no
  // gRPC deadline to a call made under it, defaultMs included.
  for (const kind of ['serverStream', 'bidi'] as const) {
    it(`in observe mode (${kind}), it goes out with no gRPC deadline, not defaultMs`, async () => {
      const starts = record<GrpcClientStartMessage>(grpcChannels.clientStart)
      recordings.push(starts as Recording<unknown>)
      await chain(
        (toC) => {
          const call = toC.unary({}, new Metadata(), {}, () => {})
          const sent = starts.messages[0]?.budgetMs
          call.cancel()
          return Promise.resolve(sent)
        },
        { kind, mode: 'observe' },
      )
      expect(starts.messages[0]!.budgetMs).toBe(Number.POSITIVE_INFINITY)
    })
  }
})
