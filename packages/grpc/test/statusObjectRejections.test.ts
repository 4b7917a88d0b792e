import {
  Metadata,
  type ServerWritableStream,
  type ServiceError,
  type StatusObject,
  status,
} from '@grpc/grpc-js'
import { describe, expect, it } from 'vitest'
import { unary } from './support/grpc.js'
import { useWrappedServer } from './support/wrappedServer.js'

// A handler wrapped by deadlineErrors that rejects with the status object
// grpc-js's `callback` and `call.emit('error')` take — `{ code, details }`,
// not an Error — is answered with that status, as the callback answers it.
// It was answered UNKNOWN "Unknown error": an async handler that threw what
// its callback version passed lost its NOT_FOUND. The handlers fail at once:
// no timing is measured.

const serve = useWrappedServer()

function trailer(): Metadata {
  const metadata = new Metadata()
  metadata.set('x-reason', 'missing')
  return metadata
}

describe('deadlineErrors: a rejection with a gRPC status object', () => {
  it('a unary handler is answered with its code, details and trailer, as its callback would be', async () => {
    const work = await serve({
      async unary() {
        await Promise.resolve()
        throw { code: status.NOT_FOUND, details: 'no such item', metadata: trailer() }
      },
    })
    const { error } = await unary(work, {})
    expect({ code: error?.code, details: error?.details }).toEqual({
      code: status.NOT_FOUND,
      details: 'no such item',
    })
    expect(error?.metadata.get('x-reason')).toEqual(['missing'])
  })

  it('a server stream ends with it after the messages it wrote', async () => {
    const work = await serve({
      async serverStream(call: ServerWritableStream<unknown, unknown>) {
        call.write({ n: 1 })
        await Promise.resolve()
        throw { code: status.PERMISSION_DENIED, details: 'not yours' }
      },
    })
    const stream = work.serverStream({}, new Metadata(), {})
    const received: unknown[] = []
    stream.on('data', (message) => received.push(message))
    const failed = new Promise<ServiceError>((resolve) => stream.on('error', resolve))
    const ended = await new Promise<StatusObject>((resolve) => stream.on('status', resolve))
    expect(received).toEqual([{ n: 1 }])
    expect({ code: ended.code, details: ended.details }).toEqual({
      code: status.PERMISSION_DENIED,
      details: 'not yours',
    })
    expect((await failed).code).toBe(status.PERMISSION_DENIED)
  })

  it('one with a message and no details sends the message, as grpc-js reads one', async () => {
    const work = await serve({
      async unary() {
        throw { code: status.FAILED_PRECONDITION, message: 'not ready' }
      },
    })
    const { error } = await unary(work, {})
    expect({ code: error?.code, details: error?.details }).toEqual({
      code: status.FAILED_PRECONDITION,
      details: 'not ready',
    })
  })

  it('trailer metadata that is no Metadata is left out, not thrown on: the status still goes', async () => {
    const work = await serve({
      async unary() {
        throw Object.assign(new Error('gone'), {
          code: status.NOT_FOUND,
          metadata: { 'x-reason': 'missing' },
        })
      },
    })
    const { error } = await unary(work, {})
    expect({ code: error?.code, details: error?.details }).toEqual({
      code: status.NOT_FOUND,
      details: 'gone',
    })
    expect(error?.metadata.get('x-reason')).toEqual([])
  })

  it('one whose code is no failure status (OK, an HTTP 503, a string) is UNKNOWN without its details', async () => {
    const work = await serve({
      async unary(call: { request: { code: unknown } }) {
        throw { code: call.request.code, details: 'secret upstream body' }
      },
    })
    for (const code of [status.OK, 503, '5']) {
      const { error } = await unary(work, { code })
      expect({ code, status: error?.code, details: error?.details }).toEqual({
        code,
        status: status.UNKNOWN,
        details: 'Unknown error',
      })
    }
  })
})
