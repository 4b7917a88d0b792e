import { type handleServerStreamingCall, Metadata, type ServerWritableStream } from '@grpc/grpc-js'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadlineInterceptor,
  deadlineServerInterceptor,
  type GrpcServerStartMessage,
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
let work: WorkClientApi | undefined
afterEach(async () => {
  work?.close()
  await server?.close()
})

describe('deadlineServerInterceptor: a stream with no deadline', () => {
  it('a server-streaming call sent none (a watch, from our own client) gets none: it runs past defaultMs until it ends', async () => {
    const clock = new ManualClock()
    const starts = record<GrpcServerStartMessage>(grpcChannels.serverStart)
    const watching = deferred<ServerWritableStream<unknown, unknown>>()
    const serverStream: handleServerStreamingCall<unknown, unknown> = (call) => {
      call.write({ n: 1 })
      watching.resolve(call)
    }
    server = await startServer({ serverStream }, [
      deadlineServerInterceptor({ defaultMs: 2000, clock }),
    ])
    work = connect(server.address, [deadlineInterceptor()])
    const stream = work.serverStream({}, new Metadata(), {})
    const received: unknown[] = []
    const ended = new Promise<{ code: number }>((resolve) => {
      stream.on('data', (message: unknown) => received.push(message))
      stream.on('status', resolve)
      stream.on('error', () => {})
    })
    const call = await watching.promise
    // Far past defaultMs on the server's clock: `defaultMs` ended such a stream at 2 s.
    clock.advance(60_000)
    call.write({ n: 2 })
    call.end()
    expect((await ended).code).toBe(0)
    expect(received).toEqual([{ n: 1 }, { n: 2 }])
    expect(starts.messages[0]).toMatchObject({
      budgetMs: Number.POSITIVE_INFINITY,
      // No deadline came and none was given: not `defaultMs`'s doing.
      source: 'none',
    })
    starts.stop()
  })
})
