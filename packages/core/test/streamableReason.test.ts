import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { revokedProxy, unreadableMessageError } from '../../../test/support/unreadableValues.js'
import { streamableReason } from '../src/index.js'

/**
 * Node's `stream.destroy(err)` reads `err.stack` first: for a revoked Proxy,
 * or an Error whose `message` getter throws (V8 formats the trace on that
 * read), destroy itself threw and the stream never errored.
 */
describe('streamableReason', () => {
  it('gives a reason a stream can take as it is', () => {
    const error = new Error('shutdown')
    const noPrototype = Object.create(null)
    expect(streamableReason(error)).toBe(error)
    expect(streamableReason(noPrototype)).toBe(noPrototype)
    expect(streamableReason('shutdown')).toBe('shutdown')
    expect(streamableReason(undefined)).toBe(undefined)
  })

  it.each([
    ['an Error whose message getter throws', unreadableMessageError],
    ['a revoked Proxy', revokedProxy],
  ])('%s: an Error with it as cause, that a stream is destroyed with', async (_, make) => {
    const reason = make()
    const stream = new PassThrough()
    expect(() => stream.destroy(reason as Error)).toThrow()
    const safe = streamableReason(reason) as Error
    expect(safe).toBeInstanceOf(Error)
    expect(safe.cause === reason).toBe(true)
    expect(safe.message).toBe('an object')
    const other = new PassThrough()
    const errored = new Promise((resolve) => other.once('error', resolve))
    other.destroy(safe)
    expect(await errored).toBe(safe)
  })
})
