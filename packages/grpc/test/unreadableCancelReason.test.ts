import { type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js'
import { ClientClosedError, currentDeadline, Deadline, runWithDeadline } from '@hourglass/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { unreadableValues } from '../../../test/support/unreadableValues.js'
import { deadlineInterceptor, deadlineServerInterceptor } from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// A deadline may be cancelled with anything: `Deadline.after(ms, { signal })`
// follows the caller's AbortController, whose `abort(reason)` takes any
// value. The client interceptor wrote that reason into the call's status
// details with `String(reason)`, or its `message`, unguarded. A reason
// whose message cannot be read — an object with no prototype, an Error whose
// `message` getter throws, a revoked Proxy — threw inside the deadline's
// hook: reported as uncaught (the process ended), and the call was never
// cancelled, so the server worked on for a caller that had gone. Made
// under a deadline already cancelled so, the call threw that TypeError
// where it was made instead of failing CANCELLED.

const unreadable = unreadableValues

describe('a caller deadline cancelled with a reason whose message cannot be read', () => {
  let server: RunningServer
  let client: WorkClientApi
  let arrived = deferred<AbortSignal>()
  beforeAll(async () => {
    server = await startServer(
      {
        // Never answers: only the cancel can end the call.
        unary: (_call: ServerUnaryCall<unknown, unknown>, _callback: sendUnaryData<unknown>) => {
          arrived.resolve(currentDeadline()!.signal)
        },
      },
      [deadlineServerInterceptor()],
    )
    client = connect(server.address, [deadlineInterceptor()])
  })
  afterAll(async () => {
    client.close()
    await server.close()
  })

  it.each(Object.keys(unreadable))(
    'in flight (%s): the call is cancelled at once, CANCELLED, and the server handler is stopped',
    async (name) => {
      arrived = deferred<AbortSignal>()
      const controller = new AbortController()
      const caller = Deadline.after(60_000, { signal: controller.signal })
      const answer = runWithDeadline(caller, () => unary(client, {}))
      const serverSignal = await arrived.promise
      const stopped = new Promise<unknown>((resolve) =>
        serverSignal.addEventListener('abort', () => resolve(serverSignal.reason)),
      )

      controller.abort(unreadable[name]!())

      const { error } = await answer
      expect(error?.code).toBe(status.CANCELLED)
      expect(error?.details).toBe('cancelled: an object')
      expect(await stopped).toBeInstanceOf(ClientClosedError)
      caller.dispose()
    },
  )

  it.each(Object.keys(unreadable))(
    'before it is sent (%s): the call fails CANCELLED, nothing thrown where it is made',
    async (name) => {
      const controller = new AbortController()
      const caller = Deadline.after(60_000, { signal: controller.signal })
      controller.abort(unreadable[name]!())

      const { error } = await runWithDeadline(caller, () => unary(client, {}))

      expect(error?.code).toBe(status.CANCELLED)
      expect(error?.details).toBe("not sent, the caller's deadline was cancelled: an object")
      caller.dispose()
    },
  )
})
