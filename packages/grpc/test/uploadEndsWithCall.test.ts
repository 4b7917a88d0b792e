import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { type handleClientStreamingCall, Metadata, type ServiceError, status } from '@grpc/grpc-js'
import { ClientClosedError, Deadline, runWithDeadline } from '@hourglass/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { deadlineInterceptor, deadlineServerInterceptor } from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  startServer,
  type WorkClientApi,
} from './support/grpc.js'

let server: RunningServer | undefined
let client: WorkClientApi | undefined
afterEach(async () => {
  client?.close()
  await server?.close()
})

// 4 MB in 64 KB messages: more than grpc-js's retry buffer (1 MB a call) and
// HTTP/2's windows hold, so a server that does not read leaves a write of the
// caller's waiting on flow control.
const upload = () => {
  const chunk = 'x'.repeat(64 * 1024)
  return Readable.from(
    (function* () {
      for (let i = 0; i < 64; i++) yield { chunk }
    })(),
    { objectMode: true },
  )
}

interface Answer {
  error: ServiceError | null
  value?: unknown
}

// A client-streaming upload piped into the call (`pipeline(file, call)`):
// when the call ended with a write of the caller's waiting on HTTP/2 flow
// control, grpc-js never called that write back. The pipeline (and the
// source it holds open) waited for good, after the caller's deadline had
// cancelled the call — an Express handler's `await pipeline(…)` never
// settled, its request long answered 504.
describe('a client-streaming upload whose call ends while a write waits on flow control', () => {
  it("the caller's deadline cancels it: the pipeline settles, the call's callback says CANCELLED", async () => {
    const arrived = deferred()
    const handler: handleClientStreamingCall<unknown, unknown> = (call) => {
      call.pause() // reads nothing: the upload stalls
      arrived.resolve()
    }
    server = await startServer({ clientStream: handler }, [deadlineServerInterceptor()])
    client = connect(server.address, [deadlineInterceptor()])
    const caller = Deadline.after(60_000)
    const answer = deferred<Answer>()
    const call = runWithDeadline(caller, () =>
      client!.clientStream(new Metadata(), {}, (error, value) => answer.resolve({ error, value })),
    )
    const piped = pipeline(upload(), call)
    await arrived.promise
    await vi.waitFor(() => expect(call.writableNeedDrain).toBe(true), { timeout: 10_000 })

    caller.cancel(new ClientClosedError())

    expect((await answer.promise).error?.code).toBe(status.CANCELLED)
    await expect(piped).resolves.toBeUndefined()
    caller.dispose()
  })

  it('the server answers without reading it: the pipeline settles, the caller has the answer', async () => {
    const handler: handleClientStreamingCall<unknown, unknown> = (_call, callback) => {
      callback(null, { early: true })
    }
    server = await startServer({ clientStream: handler }, [deadlineServerInterceptor()])
    client = connect(server.address, [deadlineInterceptor()])
    const answer = deferred<Answer>()
    const call = client.clientStream(new Metadata(), {}, (error, value) =>
      answer.resolve({ error, value }),
    )

    await pipeline(upload(), call)

    expect(await answer.promise).toEqual({ error: null, value: { early: true } })
  })
})
