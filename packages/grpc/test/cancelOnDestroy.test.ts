import { finished, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import {
  credentials,
  type handleBidiStreamingCall,
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

  it("destroy(error) is seen as that error, once: the cancel's CANCELLED reaches no listener, as after destroy() Node emits only the destroy's own", async () => {
    const watch = endlessWatch()
    server = await startServer({ serverStream: watch.serverStream })
    client = connectWith(server.address, [deadlineInterceptor()])
    const stream = client.serverStream({}, new Metadata(), {})
    const first = deferred()
    stream.once('data', () => first.resolve())
    await first.promise
    stream.pause()
    const errors: unknown[] = []
    stream.on('error', (error) => errors.push(error))
    const seen = new Promise<unknown>((resolve) => finished(stream, resolve))
    const status = new Promise<{ code: number }>((resolve) => stream.on('status', resolve))
    const mine = new Error('gave up: too slow')
    stream.destroy(mine)
    // Was grpc-js's "1 CANCELLED: Cancelled on client", then the error given.
    expect(await seen).toBe(mine)
    await watch.cancelled
    expect((await status).code).toBe(1)
    expect(errors).toEqual([mine])
  })

  it('a `for await` over a stream destroyed with an error of yours throws that error, not the cancel', async () => {
    const watch = endlessWatch()
    server = await startServer({ serverStream: watch.serverStream })
    client = connectWith(server.address, [deadlineInterceptor()])
    const stream = client.serverStream({}, new Metadata(), {})
    const mine = new Error('shutting down')
    let thrown: unknown
    try {
      for await (const _ of stream) stream.destroy(mine)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBe(mine)
    await watch.cancelled
  })

  it('destroy() with an error listener of yours: no error reaches it (the cancel is yours), as without the call', async () => {
    const watch = endlessWatch()
    server = await startServer({ serverStream: watch.serverStream })
    client = connectWith(server.address, [deadlineInterceptor()])
    const stream = client.serverStream({}, new Metadata(), {})
    const errors: unknown[] = []
    stream.on('error', (error) => errors.push(error))
    const first = deferred()
    stream.once('data', () => first.resolve())
    await first.promise
    const closed = new Promise((resolve) => stream.on('close', resolve))
    const status = new Promise<{ code: number }>((resolve) => stream.on('status', resolve))
    stream.destroy()
    await closed
    await watch.cancelled
    expect((await status).code).toBe(1)
    expect(errors).toEqual([])
  })

  it('a bidi call given up by `for await … break` is cancelled: the server sees it', async () => {
    const cancelled = deferred()
    const bidi: handleBidiStreamingCall<unknown, unknown> = (call) => {
      call.on('cancelled', () => cancelled.resolve())
      call.on('data', (message) => call.write(message))
    }
    server = await startServer({ bidi })
    client = connectWith(server.address, [deadlineInterceptor()])
    const stream = client.bidi(new Metadata(), {})
    for (let n = 1; n <= 3; n++) stream.write({ n })
    expect(await readThree(stream)).toBe(3)
    await cancelled.promise
  })

  it('a client-streaming call fed by a pipeline() whose source fails is cancelled: the server sees it, the callback gets CANCELLED', async () => {
    const cancelled = deferred()
    const received = deferred()
    const clientStream: handleClientStreamingCall<unknown, unknown> = (call, callback) => {
      call.on('cancelled', () => cancelled.resolve())
      call.on('data', () => received.resolve())
      call.on('end', () => callback(null, { done: true }))
    }
    server = await startServer({ clientStream })
    client = connectWith(server.address, [deadlineInterceptor()])
    const answer = deferred<{ code: number | undefined }>()
    const writer = client.clientStream(new Metadata(), {}, (error) =>
      answer.resolve({ code: error?.code }),
    )
    const failure = new Error('the source failed')
    // Fails once the server has the first message: the call is under way.
    async function* source() {
      yield { n: 1 }
      await received.promise
      throw failure
    }
    const piped = pipeline(Readable.from(source()), writer)
    await expect(piped).rejects.toBe(failure)
    expect(await answer.promise).toEqual({ code: 1 })
    await cancelled.promise
  })

  it('without deadlineInterceptor too, a stream destroyed in the turn it was made (a pipeline() given an aborted signal) is cancelled: the server sees it', async () => {
    // grpc-js 1.14 sends a call cancelled before it made the call's stream,
    // and never resets it: the watch below ran on, never told.
    const watch = endlessWatch()
    server = await startServer({ serverStream: watch.serverStream })
    client = connectWith(server.address, [])
    await new Promise<void>((resolve, reject) =>
      client!.waitForReady(Date.now() + 5_000, (error) => (error ? reject(error) : resolve())),
    )
    const stream = client.serverStream({}, new Metadata(), {})
    const closed = new Promise((resolve) => stream.on('close', resolve))
    stream.destroy()
    await closed
    await watch.cancelled
  })

  it('without deadlineInterceptor, a client-streaming call destroyed in the turn it was made gets CANCELLED, and the server sees it', async () => {
    const cancelled = deferred()
    const clientStream: handleClientStreamingCall<unknown, unknown> = (call, callback) => {
      call.on('cancelled', () => cancelled.resolve())
      call.on('end', () => callback(null, { done: true }))
    }
    server = await startServer({ clientStream })
    client = connectWith(server.address, [])
    await new Promise<void>((resolve, reject) =>
      client!.waitForReady(Date.now() + 5_000, (error) => (error ? reject(error) : resolve())),
    )
    const answer = deferred<{ code: number | undefined }>()
    const writer = client.clientStream(new Metadata(), {}, (error) =>
      answer.resolve({ code: error?.code }),
    )
    writer.destroy()
    expect(await answer.promise).toEqual({ code: 1 })
    await cancelled.promise
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
