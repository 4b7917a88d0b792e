import { type handleClientStreamingCall, Metadata, type ServiceError, status } from '@grpc/grpc-js'
import { afterEach, describe, expect, it } from 'vitest'
import { deadlineServerInterceptor, type GrpcServerEndMessage, grpcChannels } from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  record,
  startServer,
  type WorkClientApi,
} from './support/grpc.js'

// Node's HTTP/2 client (grpc-js's) cancels a call by ending its side of the
// stream, then resetting it: on a stream with nothing queued (an upload
// waiting for its next chunk, then given up) the two frames go out in two
// writes, 0.1–3 ms apart on loopback. Held one turn of the event loop, the
// half-close was handed to the handler as `end` before the reset was read:
// an upload cancelled half-way was stored as the whole. The half-close is
// now held a turn and 5 ms: a timing file (the window is milliseconds).

let server: RunningServer | undefined
let client: WorkClientApi | undefined

afterEach(async () => {
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
})

describe('an upload its client cancels a moment after its last chunk', () => {
  it('is never handed to the handler as complete: no `end`, only `cancelled`, and it ends client-cancelled', async () => {
    const ends = record<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const seen: string[][] = []
    let received = deferred()
    server = await startServer(
      {
        clientStream: ((call, callback) => {
          const events: string[] = []
          seen.push(events)
          call.on('data', () => {
            events.push('data')
            received.resolve()
          })
          // An upload handler stores what it got on `end`, as the whole upload.
          call.on('end', () => {
            events.push('end')
            callback(null, { stored: true })
          })
          call.on('cancelled', () => events.push('cancelled'))
        }) satisfies handleClientStreamingCall<unknown, unknown>,
      },
      [deadlineServerInterceptor()],
    )
    client = connect(server.address)
    const RUNS = 5
    try {
      for (let i = 0; i < RUNS; i++) {
        received = deferred()
        const answer = deferred<ServiceError | null>()
        const upload = client.clientStream(
          new Metadata(),
          { deadline: Date.now() + 10_000 },
          (error) => answer.resolve(error),
        )
        upload.write({ chunk: 1 })
        await received.promise
        // The user gives up a moment later (a timer, another request): not in
        // the very turn the server read the chunk.
        setTimeout(() => upload.cancel(), 0)
        expect((await answer.promise)?.code).toBe(status.CANCELLED)
        await ends.count(i + 1)
      }
      // Then an upload that ends normally: its half-close is held as theirs
      // were, on a timer of the same length armed after theirs, which fires
      // after theirs. Once its handler has `end`, every earlier half-close
      // has been handed on or dropped — an event, not a wait.
      received = deferred()
      const last = deferred<ServiceError | null>()
      const upload = client.clientStream(
        new Metadata(),
        { deadline: Date.now() + 10_000 },
        (error) => last.resolve(error),
      )
      upload.write({ chunk: 1 })
      await received.promise
      upload.end()
      expect(await last.promise).toBeNull()
      expect(seen.slice(0, RUNS)).toEqual(Array.from({ length: RUNS }, () => ['data', 'cancelled']))
      // (grpc-js tells every call's handler `cancelled` a tick after its status, this one too.)
      expect(seen[RUNS]?.slice(0, 2)).toEqual(['data', 'end'])
      await ends.count(RUNS + 1)
      expect(ends.messages.map((m) => m.outcome)).toEqual([
        ...Array.from({ length: RUNS }, () => 'client-cancelled'),
        'ok',
      ])
    } finally {
      ends.stop()
    }
  })
})
