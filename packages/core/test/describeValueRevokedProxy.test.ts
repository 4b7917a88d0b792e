import { Deadline, describeValue, guard, wait } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * A revoked Proxy passed as an option: `Array.isArray` throws on it ("Cannot
 * perform 'IsArray' on a proxy that has been revoked"), so showing it in the
 * refusal threw instead — a message naming no option, and thrown
 * synchronously out of `wait` and `guard`, whose callers handle only their
 * rejection.
 */
describe('describeValue of a revoked Proxy', () => {
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    return proxy
  }

  it('shows it as an object, never throws', () => {
    expect(describeValue(revoked())).toBe('an object')
  })

  it('wait and guard reject naming the option, they do not throw', async () => {
    const signal = revoked() as unknown as AbortSignal
    let waiting: Promise<unknown> | undefined
    expect(() => {
      waiting = wait(10, { signal })
    }).not.toThrow()
    await expect(waiting).rejects.toThrow('wait: signal must be an AbortSignal, got an object')
    const deadline = revoked() as unknown as Deadline
    let guarded: Promise<unknown> | undefined
    expect(() => {
      guarded = guard(Promise.resolve(1), { deadline })
    }).not.toThrow()
    await expect(guarded).rejects.toThrow('guard: deadline must be a Deadline, got an object')
  })

  it('a Deadline option refused names the option', () => {
    expect(() => Deadline.after(10, { signal: revoked() as unknown as AbortSignal })).toThrow(
      'Deadline: signal must be an AbortSignal, got an object',
    )
  })
})
