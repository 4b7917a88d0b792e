import { ClientClosedError } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { errorReply } from '../src/http/errorReply.js'

// errorReply is exported as "any error → { status, headers, body }": what
// it is handed may be anything a handler or a hook threw, as core's guards
// and endedBy take it. A value whose reads throw threw out of it instead.
function revoked<T extends object>(target: T): T {
  const { proxy, revoke } = Proxy.revocable(target, {})
  revoke()
  return proxy
}

describe('errorReply: a value whose reads throw', () => {
  it.each([
    ['a revoked Proxy', () => revoked(new Error('x'))],
    [
      'a throwing cause getter',
      () =>
        Object.defineProperty(new Error('y'), 'cause', {
          get() {
            throw new Error('cause getter')
          },
        }),
    ],
    ['a revoked causes list', () => Object.assign(new Error('z'), { causes: revoked([]) })],
  ])('%s is an internal error, not a throw', (_name, make) => {
    const shaped = errorReply(make())
    expect(shaped.status).toBe(500)
    expect(shaped.body.error.code).toBe('internal_error')
  })

  it('still finds a client that left among readable causes', () => {
    const shaped = errorReply(
      Object.assign(new Error('w'), { causes: [{ cause: new ClientClosedError() }] }),
    )
    expect(shaped.status).toBe(499)
  })

  it('one unreadable field or member hides no other: a client that left is still found', () => {
    expect(
      errorReply(Object.assign(new Error('b'), { causes: [revoked({}), new ClientClosedError()] }))
        .status,
    ).toBe(499)
    const throwingCause = Object.defineProperty(
      Object.assign(new Error('c'), { causes: [new ClientClosedError()] }),
      'cause',
      {
        get() {
          throw new Error('cause getter')
        },
      },
    )
    expect(errorReply(throwingCause).status).toBe(499)
  })
})
