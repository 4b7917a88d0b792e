/**
 * Values whose message cannot be read, as a caller may abort with them or a
 * handler throw them: `String()` of an object with no prototype throws, an
 * Error's `message` getter may throw, and any look at a revoked Proxy
 * (`instanceof` included) throws. Each call makes a new one.
 */
export const unreadableValues: Record<string, () => unknown> = {
  'an object with no prototype': () => Object.assign(Object.create(null), { why: 'shutdown' }),
  'an Error whose message getter throws': unreadableMessageError,
  'a revoked Proxy': revokedProxy,
}

/** An Error whose `message` getter throws. */
export function unreadableMessageError(): Error {
  return Object.defineProperty(new Error('x'), 'message', {
    get() {
      throw new Error('no message for you')
    },
  })
}

/** A revoked Proxy of an Error: every look at it throws. */
export function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable(new Error('x'), {})
  revoke()
  return proxy
}
