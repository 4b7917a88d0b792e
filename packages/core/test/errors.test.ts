import {
  ClientClosedError,
  DeadlineExceededError,
  errorCode,
  isAbortError,
  isClientClosed,
  isDeadlineExceeded,
  isHourglassError,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

describe('typed errors', () => {
  it('carry a stable code, a readable message and a chained cause', () => {
    const cause = new Error('upstream')
    const e = new DeadlineExceededError({
      budgetMs: 2000.4,
      elapsedMs: 2003.6,
      slice: 'model',
      cause,
    })
    expect(e.code).toBe('DEADLINE_EXCEEDED')
    expect(e.name).toBe('DeadlineExceededError')
    expect(e.message).toBe(
      'deadline exceeded in slice "model": 2004 ms elapsed of a 2000 ms budget',
    )
    expect(e.cause).toBe(cause)
    expect(new ClientClosedError().code).toBe('CLIENT_CLOSED')
  })

  it('a deadline error says 504 as http-errors do (status, statusCode), adding no own field', () => {
    // Express's final handler and error handlers of the `err.status ?? 500`
    // kind read these: without them a slice's expiry was answered 500.
    const e = new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100, slice: 'model' })
    expect(e.status).toBe(504)
    expect(e.statusCode).toBe(504)
    // An app may still say its own, on that error alone (as on any error):
    // a getter without a setter threw here in strict mode.
    const mine = new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100 })
    ;(mine as { status: number }).status = 503
    expect(mine.status).toBe(503)
    expect(e.status).toBe(504)
    // Logs, JSON and equality checks of the error see the fields they saw before.
    expect(Object.keys(e)).toEqual(['code', 'name', 'budgetMs', 'elapsedMs', 'slice'])
    expect(JSON.parse(JSON.stringify(e))).not.toHaveProperty('status')
    // Nothing else of core's says an HTTP status: a client that left, or a
    // plan misused, is no timeout (the final handler's 500 stands for those).
    expect((new ClientClosedError() as { status?: unknown }).status).toBeUndefined()
  })

  it('guards recognise errors from a second installed copy, where instanceof fails', async () => {
    // A query string makes the module loader treat this as a separate copy of the module.
    const copy = (await import(
      // @ts-expect-error -- the query string is for the loader only
      '../src/DeadlineExceededError.ts?second-copy'
    )) as typeof import('../src/DeadlineExceededError.js')
    const foreign = new copy.DeadlineExceededError({ budgetMs: 1, elapsedMs: 1 })
    expect(foreign instanceof DeadlineExceededError).toBe(false)
    expect(isDeadlineExceeded(foreign)).toBe(true)
    expect(isHourglassError(foreign)).toBe(true)
    expect(isClientClosed(foreign)).toBe(false)
  })

  it('guards reject look-alikes without the marker', () => {
    expect(isDeadlineExceeded({ code: 'DEADLINE_EXCEEDED' })).toBe(false)
    expect(isDeadlineExceeded(null)).toBe(false)
    expect(isDeadlineExceeded('DEADLINE_EXCEEDED')).toBe(false)
  })

  it('errorCode: an Hourglass code, else a string code, else a name, else UNKNOWN — never a message', () => {
    expect(errorCode(new DeadlineExceededError({ budgetMs: 1, elapsedMs: 1 }))).toBe(
      'DEADLINE_EXCEEDED',
    )
    expect(errorCode(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe(
      'ECONNRESET',
    )
    expect(errorCode(new TypeError('bad'))).toBe('TypeError')
    expect(errorCode(new DOMException('gone', 'AbortError'))).toBe('AbortError')
    // A numeric code (gRPC status) or an empty one is not a vocabulary word: the name is.
    expect(errorCode(Object.assign(new Error('x'), { code: 4 }))).toBe('Error')
    expect(errorCode(Object.assign(new Error('x'), { code: '' }))).toBe('Error')
    for (const odd of [undefined, null, 'boom', 42, {}]) expect(errorCode(odd)).toBe('UNKNOWN')
  })

  it('isAbortError: an AbortError by name or Node’s ABORT_ERR code; a deadline’s expiry or a client leaving is not one', async () => {
    const controller = new AbortController()
    controller.abort()
    expect(isAbortError(controller.signal.reason)).toBe(true)
    const { setTimeout: sleep } = await import('node:timers/promises')
    const nodeAbort = await sleep(10_000, undefined, { signal: controller.signal }).catch((e) => e)
    expect(isAbortError(nodeAbort)).toBe(true)
    expect(isAbortError(Object.assign(new Error('x'), { code: 'ABORT_ERR' }))).toBe(true)
    // What HTTP clients throw for their signal's abort, naming it neither way.
    const { APIUserAbortError } = await import('openai')
    const sdkAbort = new APIUserAbortError()
    expect(sdkAbort.name).toBe('Error')
    expect(isAbortError(sdkAbort)).toBe(true)
    // axios's CanceledError; before axios 1, a Cancel marked __CANCEL__ (no
    // name, no code); got's CancelError (its .cancel()).
    const canceled = Object.assign(new Error('canceled'), {
      name: 'CanceledError',
      code: 'ERR_CANCELED',
    })
    expect(isAbortError(canceled)).toBe(true)
    class Cancel {
      message = 'canceled'
    }
    Object.assign(Cancel.prototype, { __CANCEL__: true })
    expect(isAbortError(new Cancel())).toBe(true)
    expect(isAbortError(Object.assign(new Error('x'), { name: 'CancelError' }))).toBe(true)
    expect(isAbortError(new DeadlineExceededError({ budgetMs: 1, elapsedMs: 1 }))).toBe(false)
    expect(isAbortError(new ClientClosedError())).toBe(false)
    for (const odd of [undefined, null, 'AbortError', new Error('AbortError')]) {
      expect(isAbortError(odd)).toBe(false)
    }
  })

  // errorCode runs inside error handlers and event listeners: a thrown value
  // whose `code` or `name` read throws (a revoked Proxy, a getter) made the
  // handler throw instead, losing the error it was handling.
  it('errorCode and isAbortError never throw for a value whose properties throw', () => {
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    const getter = Object.defineProperty({}, 'code', {
      get() {
        throw new Error('no')
      },
    })
    expect(errorCode(proxy)).toBe('UNKNOWN')
    expect(isAbortError(proxy)).toBe(false)
    expect(errorCode(Object.assign(getter, { name: 'Odd' }))).toBe('Odd')
    expect(isAbortError(getter)).toBe(false)
  })
})
