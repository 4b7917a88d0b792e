import { Metadata, type ServerWritableStream, type ServiceError, status } from '@grpc/grpc-js'
import { currentDeadline, ManualClock, wait } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import {
  type GrpcServerEndMessage,
  type GrpcServerLateWriteMessage,
  grpcChannels,
} from '../src/index.js'
import { deferred, record } from './support/grpc.js'
import { useWrappedServer } from './support/wrappedServer.js'

// A streaming handler fails the way grpc-js asks (`call.emit('error', e)`).
// When the call's deadline already ended it, the error is the handler
// noticing, as a `callback(e)` or a rejection is: dropped. It went to grpc-js,
// which sent it as a second status, reported as a late write (`sendStatus`)
// for every stream a deadline cut, before the call's end event.
const serve = useWrappedServer()

describe("a streaming handler's call.emit('error', e) after the deadline answered", () => {
  it('is the handler noticing, as callback(e) and a rejection are: no late write', async () => {
    const clock = new ManualClock()
    const late = record<GrpcServerLateWriteMessage>(grpcChannels.serverLateWrite)
    const ends = record<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const running = deferred()
    const relayed = deferred()
    try {
      const client = await serve(
        {
          async serverStream(call: ServerWritableStream<unknown, unknown>) {
            running.resolve()
            try {
              await wait(60_000, { deadline: currentDeadline() })
              call.end()
            } catch (error) {
              call.emit('error', error)
              relayed.resolve()
            }
          },
        },
        { clock, reserveMs: 0 },
      )
      const metadata = new Metadata()
      metadata.set('x-deadline-remaining-ms', '100')
      const stream = client.serverStream({}, metadata, {})
      const failed = new Promise<ServiceError>((resolve) => stream.on('error', resolve))
      await running.promise
      clock.advance(100)
      expect((await failed).code).toBe(status.DEADLINE_EXCEEDED)
      await relayed.promise
      await ends.count(1)
      await new Promise((resolve) => setImmediate(resolve))
      expect(late.messages).toEqual([])
      expect(ends.messages[0]?.outcome).toBe('expired')
    } finally {
      late.stop()
      ends.stop()
    }
  })
})
