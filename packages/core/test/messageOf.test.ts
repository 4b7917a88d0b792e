import { describe, expect, it } from 'vitest'
import { Deadline, messageOf } from '../src/index.js'

/**
 * A caller aborts its deadline's signal with anything. The reasons below
 * threw out of `reason instanceof Error ? reason.message : String(reason)`:
 * the code writing a status's or an error's message died in the abort
 * listener instead.
 */
describe('messageOf', () => {
  it("reads an Error's message, and anything else as String writes it", () => {
    expect(messageOf(new TypeError('bad gateway'))).toBe('bad gateway')
    expect(messageOf('shutdown')).toBe('shutdown')
    expect(messageOf(undefined)).toBe('undefined')
    expect(messageOf(42n)).toBe('42')
    expect(messageOf({ message: 'not an Error' })).toBe('[object Object]')
  })

  it('never throws: a reason whose message cannot be read reads as describeValue shows it', () => {
    const { proxy, revoke } = Proxy.revocable(new Error('x'), {})
    revoke()
    const getter = new Error('x')
    Object.defineProperty(getter, 'message', {
      get() {
        throw new Error('no message for you')
      },
    })
    const unprintable = { toString: () => ({}), valueOf: () => ({}) }
    expect(messageOf(Object.create(null))).toBe('an object')
    expect(messageOf(proxy)).toBe('an object')
    expect(messageOf(getter)).toBe('an object')
    expect(messageOf(unprintable)).toBe('an object')
    expect(messageOf(Symbol('s'))).toBe('Symbol(s)')
  })

  it("reads a deadline's cancel reason as it came", () => {
    const controller = new AbortController()
    const deadline = Deadline.after(60_000, { signal: controller.signal })
    controller.abort(Object.create(null))
    expect(deadline.done).toBe(true)
    expect(messageOf(deadline.reason)).toBe('an object')
    deadline.dispose()
  })
})
