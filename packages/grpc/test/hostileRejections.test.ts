import {
  Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js'
import { describe, expect, it, vi } from 'vitest'
import { captureWarnings } from './support/captureWarnings.js'
import { unary } from './support/grpc.js'
import { useWrappedServer } from './support/wrappedServer.js'

// What a handler rejects with is whatever its code threw: the mapping answers
// it, whatever it is, and never throws itself (a throw there was an uncaught
// exception that ended the process, and the call went unanswered). No timing
// is measured: the handlers fail at once.

const serve = useWrappedServer()

type Unary = ServerUnaryCall<unknown, unknown>

function revoked(): object {
  const { proxy, revoke } = Proxy.revocable(new Error('x'), {})
  revoke()
  return proxy
}

function throwingGetter<T extends object>(target: T, property: string): T {
  return Object.defineProperty(target, property, {
    get() {
      throw new Error(`no ${property} for you`)
    },
  })
}

/** Values whose property reads throw, as a handler may reject with them. */
const hostile: Record<string, () => unknown> = {
  'a revoked Proxy': revoked,
  'an Error caused by a revoked Proxy': () => new Error('x', { cause: revoked() }),
  'an Error whose code getter throws': () =>
    Object.defineProperty(new Error('x'), 'code', {
      get() {
        throw new Error('no code for you')
      },
    }),
  // A gRPC code readable, the rest of its status not: grpc-js read these
  // when it was handed the error, inside the rejection handler, and threw.
  'an Error with a gRPC code whose details getter throws': () =>
    throwingGetter(Object.assign(new Error('x'), { code: status.NOT_FOUND }), 'details'),
  'an Error with a gRPC code whose message getter throws': () =>
    throwingGetter(Object.assign(new Error('x'), { code: status.NOT_FOUND }), 'message'),
  'an Error with a gRPC code whose metadata getter throws': () =>
    throwingGetter(Object.assign(new Error('x'), { code: status.NOT_FOUND }), 'metadata'),
  'an object whose cause getter throws': () => ({
    get cause() {
      throw new Error('no cause for you')
    },
  }),
}

describe('deadlineErrors: a rejection with a value whose reads throw', () => {
  for (const [kind, make] of Object.entries(hostile)) {
    it(`${kind} is answered UNKNOWN "Unknown error"`, async () => {
      const work = await serve({
        async unary() {
          throw make()
        },
      })
      const result = await unary(work, {})
      expect({ code: result.error?.code, details: result.error?.details }).toEqual({
        code: status.UNKNOWN,
        details: 'Unknown error',
      })
    })
  }

  it('after the handler answered, a revoked Proxy is the process warning, not an uncaught exception', async () => {
    const { warnings, restore } = captureWarnings('HOURGLASS_GRPC_FAILED_AFTER_ANSWER')
    try {
      const work = await serve({
        async unary(_call: Unary, callback: sendUnaryData<unknown>) {
          callback(null, { saved: true })
          throw revoked()
        },
      })
      expect(await unary(work, {})).toEqual({ value: { saved: true } })
      await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 10_000 })
      expect(warnings[0]?.message).toBe(
        'the handler of /hourglass.test.Work/Unary rejected after it had answered: an object whose properties cannot be read',
      )
    } finally {
      restore()
    }
  })
})

describe('deadlineErrors: a rejection whose code is 0 (OK) is a failure', () => {
  it('a unary handler is answered UNKNOWN without its message, not OK', async () => {
    const work = await serve({
      async unary() {
        throw Object.assign(new Error('secret internal detail'), { code: status.OK })
      },
    })
    const result = await unary(work, {})
    expect({ code: result.error?.code, details: result.error?.details }).toEqual({
      code: status.UNKNOWN,
      details: 'Unknown error',
    })
  })

  it('a server stream cut short is not reported complete: UNKNOWN without the message, after the messages it wrote', async () => {
    const work = await serve({
      async serverStream(call: ServerWritableStream<unknown, unknown>) {
        call.write({ n: 1 })
        await Promise.resolve()
        throw Object.assign(new Error('stream secret'), { code: status.OK })
      },
    })
    const stream = work.serverStream({}, new Metadata(), {})
    const received: unknown[] = []
    stream.on('data', (m) => received.push(m))
    stream.on('error', () => {}) // the status below is what the caller reads
    const ended = await new Promise<{ code: number; details: string }>((resolve) =>
      stream.on('status', resolve),
    )
    expect(received).toEqual([{ n: 1 }])
    expect({ code: ended.code, details: ended.details }).toEqual({
      code: status.UNKNOWN,
      details: 'Unknown error',
    })
  })
})
