import { PassThrough } from 'node:stream'
import { finished } from 'node:stream/promises'
import { Metadata, type ServerReadableStream, type sendUnaryData, status } from '@grpc/grpc-js'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadlineErrors,
  deadlineServerInterceptor,
  type GrpcServerEndMessage,
  type GrpcServerLateWriteMessage,
  type GrpcServerStartMessage,
  grpcChannels,
} from '../src/index.js'
import { connect, deferred, type RunningServer, record, startServer } from './support/grpc.js'

let server: RunningServer | undefined
const recordings: Array<{ stop(): void }> = []
afterEach(async () => {
  for (const r of recordings.splice(0)) r.stop()
  await server?.close()
  server = undefined
})

function watch<T>(channel: { name: string }) {
  const r = record<T>(channel)
  recordings.push(r)
  return r
}

/**
 * A client-streaming handler reading its upload with `for await` (or a
 * `pipeline()` from the call): when the deadline answers, grpc-js destroys
 * the call's stream, and the loop rejects with Node's
 * `ERR_STREAM_PREMATURE_CLOSE`. That is the handler noticing the deadline
 * ended its call, as an abort error is: swallowed, not answered `UNKNOWN`
 * a second time (reported as a late write for every upload a deadline cut).
 */
describe('deadlineErrors: a read loop the deadline closed', () => {
  it("a client-streaming handler's for await over the call, rejected with the premature close, is swallowed: DEADLINE_EXCEEDED, no late write", async () => {
    const clock = new ManualClock()
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const late = watch<GrpcServerLateWriteMessage>(grpcChannels.serverLateWrite)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const reading = deferred()
    const settled = deferred<unknown>()
    server = await startServer(
      deadlineErrors({
        async clientStream(
          call: ServerReadableStream<unknown, unknown>,
          callback: sendUnaryData<unknown>,
        ) {
          let count = 0
          try {
            for await (const _ of call) {
              count++
              reading.resolve()
            }
          } catch (error) {
            settled.resolve(error)
            throw error
          }
          callback(null, { count })
        },
      }),
      [deadlineServerInterceptor({ clock, reserveMs: 0 })],
    )
    const client = connect(server.address)
    try {
      const metadata = new Metadata()
      metadata.set('x-deadline-remaining-ms', '100')
      const answered = new Promise<number | undefined>((resolve) => {
        const upload = client.clientStream(metadata, {}, (error) => resolve(error?.code))
        // One message, then the stream stays open: the upload is not done.
        upload.write({ n: 1 })
      })
      await reading.promise
      await starts.count(1)
      clock.advance(100)
      expect(await answered).toBe(status.DEADLINE_EXCEEDED)
      expect(await settled.promise).toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' })
      await ends.count(1)
      // One more turn: a second answer would have been reported by now.
      await new Promise((resolve) => setImmediate(resolve))
      expect(late.messages).toEqual([])
      expect(ends.messages.map((m) => m.outcome)).toEqual(['expired'])
    } finally {
      client.close()
    }
  })

  it('a premature close while the call still has its time (a source of its own cut short) is answered as before: UNKNOWN', async () => {
    server = await startServer(
      deadlineErrors({
        async clientStream(_call: ServerReadableStream<unknown, unknown>) {
          const source = new PassThrough()
          source.destroy()
          await finished(source)
        },
      }),
      [deadlineServerInterceptor({ clock: new ManualClock() })],
    )
    const client = connect(server.address)
    try {
      const code = await new Promise<number | undefined>((resolve) => {
        client.clientStream(new Metadata(), {}, (error) => resolve(error?.code)).end()
      })
      expect(code).toBe(status.UNKNOWN)
    } finally {
      client.close()
    }
  })
})
