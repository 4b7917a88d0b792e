import {
  type handleServerStreamingCall,
  type handleUnaryCall,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js'
import { currentDeadline, Deadline, runWithDeadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'
import {
  connect,
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
