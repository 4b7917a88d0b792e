import {
  Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  type StatusObject,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js'
import { describe, expect, it, vi } from 'vitest'
import { captureWarnings } from './support/captureWarnings.js'
import { unary } from './support/grpc.js'
import { useWrappedServer } from './support/wrappedServer.js'

// A handler wrapped by deadlineErrors that throws synchronously is answered
// as one that rejects. Thrown after it answered, any error was rethrown to
// grpc-js, which answered UNKNOWN over the answer given; a gRPC status thrown
// before it answered was UNKNOWN too, where the same status rejected was
// sent. The handlers fail at once: no timing is measured.

const FAILED_AFTER_ANSWER = 'HOURGLASS_GRPC_FAILED_AFTER_ANSWER'
type Unary = ServerUnaryCall<unknown, unknown>

const serve = useWrappedServer()

describe('deadlineErrors: a handler that throws synchronously', () => {
  it('after answering through its callback: the client keeps its value (not UNKNOWN), the error is a process warning', async () => {
    const { warnings, restore } = captureWarnings(FAILED_AFTER_ANSWER)
    try {
      const work = await serve({
        unary(_call: Unary, callback: sendUnaryData<unknown>) {
          callback(null, { saved: true })
          throw new Error('audit log unavailable') // a follow-up write, after the answer
        },
      })
      expect(await unary(work, {})).toEqual({ value: { saved: true } })
      await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 10_000 })
      expect(warnings[0]?.message).toBe(
        'the handler of /hourglass.test.Work/Unary rejected after it had answered: audit log unavailable',
      )
    } finally {
      restore()
    }
  })

  it('after answering, returning a thenable whose then throws: the client keeps its value, the throw is a process warning', async () => {
    const { warnings, restore } = captureWarnings(FAILED_AFTER_ANSWER)
    try {
      const work = await serve({
        unary(_call: Unary, callback: sendUnaryData<unknown>) {
          callback(null, { saved: true })
          // A function with a `then` (a thenable by the Promises rule) that throws when called.
          return Object.assign(() => {}, {
            // biome-ignore lint/suspicious/noThenProperty: a thenable that is no Promise is what this test hands back
            then: () => {
              throw new Error('then throws')
            },
          })
        },
      })
      expect(await unary(work, {})).toEqual({ value: { saved: true } })
      await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 10_000 })
    } finally {
      restore()
    }
  })

  it('after ending its stream: the client keeps every message and the OK, not UNKNOWN', async () => {
    const { warnings, restore } = captureWarnings(FAILED_AFTER_ANSWER)
    try {
      const work = await serve({
        serverStream(call: ServerWritableStream<unknown, unknown>) {
          call.write({ n: 1 })
          call.end()
          throw new Error('metrics flush failed')
        },
      })
      const stream = work.serverStream({}, new Metadata(), {})
      const received: unknown[] = []
      stream.on('data', (message) => received.push(message))
      stream.on('error', () => {}) // the status below is what the caller reads
      const ended = await new Promise<StatusObject>((resolve) => stream.on('status', resolve))
      expect(received).toEqual([{ n: 1 }])
      expect(ended.code).toBe(status.OK)
      await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 10_000 })
    } finally {
      restore()
    }
  })

  it('a gRPC status, an Error or a status object, before answering: that status, as when rejected', async () => {
    const work = await serve({
      unary(call: Unary) {
        if ((call.request as { plain: boolean }).plain) {
          throw { code: status.FAILED_PRECONDITION, details: 'not ready' }
        }
        throw Object.assign(new Error('no such item'), { code: status.NOT_FOUND })
      },
    })
    const fromError = await unary(work, { plain: false })
    const fromObject = await unary(work, { plain: true })
    expect({ code: fromError.error?.code, details: fromError.error?.details }).toEqual({
      code: status.NOT_FOUND,
      details: 'no such item',
    })
    expect({ code: fromObject.error?.code, details: fromObject.error?.details }).toEqual({
      code: status.FAILED_PRECONDITION,
      details: 'not ready',
    })
  })

  it('anything else before answering is left to grpc-js, as without the wrapper: UNKNOWN without its message', async () => {
    const work = await serve({
      unary() {
        throw new Error('secret database password in this message')
      },
    })
    const { error } = await unary(work, {})
    expect({ code: error?.code, details: error?.details }).toEqual({
      code: status.UNKNOWN,
      details: 'Unknown error',
    })
  })
})
