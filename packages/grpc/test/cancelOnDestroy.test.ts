import {
  credentials,
  type handleClientStreamingCall,
  type handleServerStreamingCall,
  InterceptingCall,
  type Interceptor,
  Metadata,
  makeGenericClientConstructor,
  type ServerWritableStream,
} from '@grpc/grpc-js'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  cancelOnDestroy,
  deadlineInterceptor,
  type GrpcClientEndMessage,
  grpcChannels,
} from '../src/index.js'
import {
  deferred,
  type RunningServer,
  record,
  startServer,
  type WorkClientApi,
  workService,
} from './support/grpc.js'

// grpc-js's client streams are Node streams whose destroy() leaves the call
// alone (grpc/grpc-node#1238): a `for await … break` over a server stream
// left the call open, the server streaming until HTTP/2 flow control stalled
// it (for good with no deadline), never told the caller had gone, and the
// client interceptor's hook on the caller's deadline in place until that
// deadline ended. An interceptor never sees the stream, so the cancel is a
// `callInvocationTransformer`: `cancelOnDestroy`.

const WorkClient = makeGenericClientConstructor(workService, 'Work')

let server: RunningServer | undefined
let client: WorkClientApi | undefined
afterEach(async () => {
  client?.close()
  await server?.close()
})

/** A watch that streams until its client cancels; `cancelled` resolves when it sees that. */
function endlessWatch() {
  const cancelled = deferred()
  let sent = 0
  const serverStream: handleServerStreamingCall<unknown, unknown> = (
    call: ServerWritableStream<unknown, unknown>,
  ) => {
    call.on('cancelled', () => cancelled.resolve())
    const pump = () => {
      while (!call.cancelled) {
        if (!call.write({ n: ++sent })) {
          call.once('drain', pump)
          return
        }
      }
    }
    pump()
  }
  return { serverStream, cancelled: cancelled.promise }
}

/** Counts the cancels that reach the call below ours. */
function cancelCounter(): { interceptor: Interceptor; count: () => number } {
  let cancels = 0
  const interceptor: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      cancel: (next) => {
        cancels++
        next()
      },
    })
  return { interceptor, count: () => cancels }
}

function connectWith(address: string, interceptors: Interceptor[]): WorkClientApi {
  return new WorkClient(address, credentials.createInsecure(), {
    interceptors,
    callInvocationTransformer: cancelOnDestroy,
  }) as unknown as WorkClientApi
}

async function readThree(stream: AsyncIterable<unknown>): Promise<number> {
  let read = 0
  for await (const _ of stream) if (++read === 3) break
  return read
}

describe('cancelOnDestroy', () => {
  it('a `for await … break` over a server stream under a deadline cancels the call: the server sees it, the hook on the deadline goes', async () => {
    const watch = endlessWatch()
    server = await startServer({ serverStream: watch.serverStream })
    client = connectWith(server.address, [deadlineInterceptor()])
    const ends = record<GrpcClientEndMessage>(grpcChannels.clientEnd)
    const deadline = Deadline.after(60_000, { clock: new ManualClock() })
    try {
      const read = await runWithDeadline(deadline, () =>
        readThree(client!.serverStream({}, new Metadata(), {})),
      )
      expect(read).toBe(3)
      await watch.cancelled
      // The call ended (its hook on the deadline released with it), long
      // before the deadline: your own cancel, not the deadline's.
      await ends.count(1)
      expect(ends.messages[0]).toMatchObject({ deadline, code: 1, outcome: 'error' })
      expect(deadline.done).toBe(false)
    } finally {
      ends.stop()
      deadline.dispose()
    }
  })

  it('cancels a stream with no deadline at all, which nothing else would ever end; a reader with no error listener does not crash on the CANCELLED', async () => {
    const watch = endlessWatch()
    server = await startServer({ serverStream: watch.serverStream })
    client = connectWith(server.address, [deadlineInterceptor()])
    const ends = record<GrpcClientEndMessage>(grpcChannels.clientEnd)
    try {
      const stream = client.serverStream({}, new Metadata(), {})
      const first = deferred()
      // No 'error' listener: grpc-js emits the cancelled call's status as one.
      stream.on('data', () => first.resolve())
      await first.promise
      stream.destroy()
      await watch.cancelled
      await ends.count(1)
      expect(ends.messages[0]).toMatchObject({ code: 1, outcome: 'error' })
    } finally {
      ends.stop()
    }
  })

  it('a stream read to its end, then destroyed by autoDestroy, is not cancelled', async () => {
    const serverStream: handleServerStreamingCall<unknown, unknown> = (call) => {
      call.write({ n: 1 })
      call.write({ n: 2 })
      call.end()
    }
    server = await startServer({ serverStream })
    const below = cancelCounter()
    client = connectWith(server.address, [deadlineInterceptor(), below.interceptor])
    const stream = client.serverStream({}, new Metadata(), {})
    const closed = new Promise((resolve) => stream.on('close', resolve))
    const status = new Promise<{ code: number }>((resolve) => stream.on('status', resolve))
    const received: unknown[] = []
    for await (const message of stream) received.push(message)
    await closed
    expect(received).toEqual([{ n: 1 }, { n: 2 }])
    expect((await status).code).toBe(0)
    expect(stream.destroyed).toBe(true)
    expect(below.count()).toBe(0)
  })

  it('a client-streaming call destroyed after finish (autoDestroy) still gets its answer', async () => {
    const clientStream: handleClientStreamingCall<unknown, unknown> = (call, callback) => {
      let count = 0
      call.on('data', () => count++)
      call.on('end', () => callback(null, { count }))
    }
    server = await startServer({ clientStream })
    client = connectWith(server.address, [deadlineInterceptor()])
    const answer = deferred<{ error: unknown; value: unknown }>()
    const writer = client.clientStream(new Metadata(), {}, (error, value) =>
      answer.resolve({ error, value }),
    )
    const closed = new Promise((resolve) => writer.on('close', resolve))
    writer.write({ n: 1 })
    writer.write({ n: 2 })
    writer.end()
    await closed
    expect(await answer.promise).toEqual({ error: null, value: { count: 2 } })
  })

  it('a unary call is left as it is', async () => {
    server = await startServer({
      unary: (_call: unknown, callback: (error: null, value: unknown) => void) =>
        callback(null, { ok: true }),
    })
    client = connectWith(server.address, [deadlineInterceptor()])
    const value = await new Promise((resolve, reject) =>
      client!.unary({}, new Metadata(), {}, (error, answer) =>
        error ? reject(error) : resolve(answer),
      ),
    )
    expect(value).toEqual({ ok: true })
  })
})
