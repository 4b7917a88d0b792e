import { describe, expect, it } from 'vitest'
import { deadlineErrors } from '../src/index.js'
import { startServer } from './support/grpc.js'

// grpc-js's addService refuses an implementation that is no object ("an
// import that named nothing": undefined) when the server is set up. Wrapped
// by deadlineErrors() it became `{}`, which addService took: the server
// started, and every call was answered UNIMPLEMENTED. Refused where it is
// written, naming the value, as withCallDeadline refuses what is no Deadline.
describe('deadlineErrors(implementation) given no object', () => {
  it.each([[undefined], [null], [42], ['handlers'], [() => {}]] as unknown[][])(
    'deadlineErrors(%o) is a TypeError naming the value, not an empty service',
    (implementation) => {
      expect(() => deadlineErrors(implementation as never)).toThrow(TypeError)
      expect(() => deadlineErrors(implementation as never)).toThrow(
        /^deadlineErrors: implementation must be an object \(the service's handlers\), got /,
      )
    },
  )

  it('the exact message', () => {
    expect(() => deadlineErrors(undefined as never)).toThrow(
      "deadlineErrors: implementation must be an object (the service's handlers), got undefined",
    )
  })

  it('a plain object, an empty one, or a class instance is still wrapped, and a server starts with it', async () => {
    class Service {
      unary(_call: unknown, callback: (error: null, value: unknown) => void) {
        callback(null, 'ok')
      }
    }
    expect(Object.keys(deadlineErrors({}))).toEqual([])
    expect(typeof deadlineErrors(new Service()).unary).toBe('function')
    const server = await startServer(deadlineErrors({ unary: () => {} }))
    await server.close()
  })
})
