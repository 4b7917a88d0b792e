import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { type handleUnaryCall, Metadata, type ServiceError, status } from '@grpc/grpc-js'
import { Deadline, runWithDeadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'
import {
  connect,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

let server: RunningServer | undefined
let client: WorkClientApi | undefined
afterEach(async () => {
  client?.close()
  await server?.close()
})

const unaryOk: handleUnaryCall<unknown, unknown> = (_call, callback) => callback(null, { ok: true })
/** Answers only a request `{ answer: true }`; the others wait for their client. */
const answerIfAsked: handleUnaryCall<unknown, unknown> = (call, callback) => {
  if ((call.request as { answer?: boolean }).answer) callback(null, { ok: true })
}

/** Whether what `ref` points at is still reachable after a few turns and forced GCs. */
async function survives(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 5 && ref.deref() !== undefined; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
  }
  return ref.deref() !== undefined
}

/**
 * A request: its deadline (whose expiry hook holds the request's objects), `work`
 * run under it, then over (its deadline disposed, as an ingress does).
 */
async function request(work: () => Promise<unknown>): Promise<WeakRef<Deadline>> {
  const deadline = Deadline.after(60_000)
  const requestObjects = { body: Buffer.alloc(1024) }
  deadline.onDone(() => requestObjects.body.length)
  await runWithDeadline(deadline, work)
  deadline.dispose()
  return new WeakRef(deadline)
}

it('the check itself: a request that makes no call is collected', async () => {
  expect(await survives(await request(() => new Promise(setImmediate)))).toBe(false)
})

it("the call that opens the connection leaves its caller's deadline behind once it is over", async () => {
  server = await startServer({ unary: unaryOk })
  client = connect(server.address, [deadlineInterceptor()])
  const call = async () => expect((await unary(client!, {})).error).toBeUndefined()
  // The first call connects; the next reuses the connection.
  expect(await survives(await request(call))).toBe(false)
  expect(await survives(await request(call))).toBe(false)
})

it("a first call the caller cancels leaves its caller's deadline behind (grpc-js arms its channel's idle timer as a call ends)", async () => {
  server = await startServer({ unary: answerIfAsked })
  client = connect(server.address, [deadlineInterceptor()])
  const cancelled = () =>
    new Promise<ServiceError | null>((resolve) => {
      const call = client!.unary({}, new Metadata(), {}, (error) => resolve(error))
      call.cancel()
    })
  let code: number | undefined
  expect(
    await survives(
      await request(async () => {
        code = (await cancelled())?.code
      }),
    ),
  ).toBe(false)
  expect(code).toBe(status.CANCELLED)
  expect((await unary(client, { answer: true })).error).toBeUndefined()
})
