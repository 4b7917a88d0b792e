import {
  type handleClientStreamingCall,
  type handleServerStreamingCall,
  type handleUnaryCall,
  InterceptingCall,
  type Interceptor,
  Metadata,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import { currentDeadline, Deadline, DeadlineExceededError, runWithDeadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// grpc-js hands a response up from the channel's HTTP/2 session, which keeps
// the async context of the call that opened the connection: another
// request's. A server stream's `end`, `status` and `close` ran under that
// request's deadline (here cancelled, as a request's is once its client has
// gone), so a call made from them was refused at once, or went out with
// that request's budget.

let server: RunningServer | undefined
let work: WorkClientApi | undefined
afterEach(async () => {
  work?.close()
  await server?.close()
})

const unaryOk: handleUnaryCall<unknown, unknown> = (_call, callback) => callback(null, { ok: true })
const twoThenEnd: handleServerStreamingCall<unknown, unknown> = (call) => {
  call.write({ n: 1 })
  call.write({ n: 2 })
  call.end()
}

it("a server stream's events run under the deadline of the request that made the call, not the one that opened the connection", async () => {
  server = await startServer({ unary: unaryOk, serverStream: twoThenEnd })
  work = connect(server.address, [deadlineInterceptor()])
  const client = work
  // Request A opens the connection, then is over: its client left.
  const first = Deadline.after(60_000)
  expect((await runWithDeadline(first, () => unary(client, {}))).error).toBeUndefined()
  first.cancel(new Error('request A is over'))

  const second = Deadline.after(60_000)
  const seen: Record<string, boolean[]> = {}
  const saw = (event: string) => {
    const under = seen[event] ?? []
    under.push(currentDeadline() === second)
    seen[event] = under
  }
  const followUp = await runWithDeadline(
    second,
    () =>
      new Promise<ServiceError | null>((resolve) => {
        const stream = client.serverStream({}, new Metadata(), {})
        for (const event of ['metadata', 'data', 'status', 'end', 'close']) {
          stream.on(event, () => saw(event))
        }
        // What a handler does when a stream ends: the next call, under its own deadline.
        stream.on('end', () => {
          client.unary({}, new Metadata(), {}, (error) => resolve(error))
        })
        stream.on('error', resolve)
      }),
  )
  expect(followUp).toBeNull()
  expect(seen).toEqual({
    metadata: [true],
    data: [true, true],
    status: [true],
    end: [true],
    close: [true],
  })
  second.dispose()
})

it("a unary call's callback runs under the caller's deadline", async () => {
  server = await startServer({ unary: unaryOk })
  work = connect(server.address, [deadlineInterceptor()])
  const client = work
  const first = Deadline.after(60_000)
  await runWithDeadline(first, () => unary(client, {}))
  first.cancel(new Error('request A is over'))
  const second = Deadline.after(60_000)
  const under = await runWithDeadline(
    second,
    () =>
      new Promise<boolean>((resolve) => {
        client.unary({}, new Metadata(), {}, () => resolve(currentDeadline() === second))
      }),
  )
  expect(under).toBe(true)
  second.dispose()
})

it("a client stream's write callbacks run under the caller's deadline", async () => {
  const ends = deferred()
  const clientStream: handleClientStreamingCall<unknown, unknown> = (call, callback) => {
    call.on('data', () => {})
    call.on('end', () => {
      ends.resolve()
      callback(null, { ok: true })
    })
  }
  server = await startServer({ unary: unaryOk, clientStream })
  work = connect(server.address, [deadlineInterceptor()])
  const client = work
  const first = Deadline.after(60_000)
  await runWithDeadline(first, () => unary(client, {}))
  first.cancel(new Error('request A is over'))
  const second = Deadline.after(60_000)
  const under = await runWithDeadline(
    second,
    () =>
      new Promise<boolean[]>((resolve) => {
        const seen: boolean[] = []
        const stream = client.clientStream(new Metadata(), {}, () => resolve(seen))
        const written = () => seen.push(currentDeadline() === second)
        stream.write({ n: 1 }, written)
        // A later write, once the stream is open and the first one went out.
        setImmediate(() => stream.write({ n: 2 }, written))
        setImmediate(() => setImmediate(() => stream.end()))
      }),
  )
  await ends.promise
  expect(under).toEqual([true, true])
  second.dispose()
})

/** Holds every call's start until `release()`, which starts them all from where it is called (a single-flight token fetch's completion). */
function heldStarts(): { interceptor: Interceptor; release(): void } {
  const held: Array<() => void> = []
  return {
    interceptor: (options, nextCall) =>
      new InterceptingCall(nextCall(options), {
        start: (metadata, listener, next) => held.push(() => next(metadata, listener)),
      }),
    release: () => {
      for (const start of held.splice(0)) start()
    },
  }
}

it("a call refused as an interceptor before ours lets go of its start answers under its caller's deadline, not the releaser's", async () => {
  server = await startServer({ unary: unaryOk })
  const hold = heldStarts()
  work = connect(server.address, [hold.interceptor, deadlineInterceptor()])
  const client = work
  const a = Deadline.after(60_000)
  const b = Deadline.after(60_000)
  const expired = Deadline.after(60_000)
  const c = Deadline.after(60_000)
  const under = (deadline: Deadline, cancel = false) =>
    runWithDeadline(
      deadline,
      () =>
        new Promise<{ code: number | undefined; ours: boolean }>((resolve) => {
          const call = client.unary({}, new Metadata(), {}, (error) =>
            resolve({ code: error?.code, ours: currentDeadline() === deadline }),
          )
          if (cancel) setImmediate(() => call.cancel())
        }),
    )
  const answers = Promise.all([
    under(a),
    // Its caller left while the start was held: refused, CANCELLED.
    under(b),
    // Its caller's deadline ran out meanwhile: refused, DEADLINE_EXCEEDED.
    under(expired),
    // Its caller cancelled it (a turn later) while the start was held: CANCELLED.
    under(c, true),
  ])
  b.cancel(new Error('the client left'))
  expired.cancel(new DeadlineExceededError({ budgetMs: 60_000, elapsedMs: 60_000 }))
  // Released from the first caller's context, once the cancel is in.
  await new Promise((resolve) => setImmediate(resolve))
  runWithDeadline(a, () => hold.release())
  expect(await answers).toEqual([
    { code: undefined, ours: true },
    { code: status.CANCELLED, ours: true },
    { code: status.DEADLINE_EXCEEDED, ours: true },
    { code: status.CANCELLED, ours: true },
  ])
  a.dispose()
  c.dispose()
})
