import { type handleServerStreamingCall, Metadata, type ServiceError, status } from '@grpc/grpc-js'
import { currentDeadline, ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
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
  type WorkClientApi,
} from './support/grpc.js'

let server: RunningServer | undefined
let client: WorkClientApi | undefined
afterEach(async () => {
  client?.close()
  await server?.close()
})

// What the README says of a stream's writes after the deadline answered: the
// first is swallowed and reported; its callback is never called (as grpc-js
// does for a call that is over), so the stream holds the writes after it.
describe("a streaming handler's writes after the deadline answered", () => {
  it('the first is swallowed and reported on server-late-write; the ones after it stay queued in the stream, with no crash', async () => {
    const clock = new ManualClock()
    const late = record<GrpcServerLateWriteMessage>(grpcChannels.serverLateWrite)
    const written = deferred<{ cancelled: boolean; callbacks: number; accepted: boolean[] }>()
    const handler: handleServerStreamingCall<unknown, unknown> = (call) => {
      const deadline = currentDeadline()!
      call.write({ n: 1 })
      call.on('cancelled', () => {
        let callbacks = 0
        const accepted = [
          call.write({ n: 2 }, () => callbacks++),
          call.write({ n: 3 }, () => callbacks++),
        ]
        call.end()
        written.resolve({
          cancelled: call.cancelled && deadline.signal.aborted,
          callbacks,
          accepted,
        })
      })
    }
    server = await startServer({ serverStream: handler }, [
      deadlineServerInterceptor({ clock, reserveMs: 0 }),
    ])
    client = connect(server.address)
    const metadata = new Metadata()
    metadata.set('x-deadline-remaining-ms', '500')
    const stream = client.serverStream({}, metadata, {})
    stream.on('data', () => clock.advance(500))
    const error = await new Promise<ServiceError>((resolve) => stream.on('error', resolve))
    expect(error.code).toBe(status.DEADLINE_EXCEEDED)
    const { cancelled, callbacks, accepted } = await written.promise
    expect(cancelled).toBe(true)
    expect(callbacks).toBe(0)
    expect(accepted).toEqual([true, true])
    // The writes are synchronous up to the interceptor: only the first reached it.
    expect(late.messages.map((m) => m.operation)).toEqual(['sendMessage'])
    late.stop()
  })
})
