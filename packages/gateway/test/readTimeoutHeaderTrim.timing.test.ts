import { describe, expect, it } from 'vitest'
import { clientReadTimeoutMs } from '../src/http/clientHeaders.js'

/**
 * A client's `X-Stainless-Read-Timeout` is read on every chat request
 * (`trustStainlessTimeout` is on by default). Its cost must grow with its
 * length, not its square: trimmed with /^[ \t]+|[ \t]+$/g, one header of
 * inner spaces within Node's 16 KiB blocked the event loop ~0.1–0.4 s, every
 * other request's deadline timer with it.
 */
describe('X-Stainless-Read-Timeout of many inner spaces', () => {
  it('is read in linear time', () => {
    const value = `1${' '.repeat(16_000)}x`
    clientReadTimeoutMs({ 'x-stainless-read-timeout': value }) // warm up
    const started = performance.now()
    for (let i = 0; i < 5; i++) {
      expect(clientReadTimeoutMs({ 'x-stainless-read-timeout': value })).toBeUndefined()
    }
    // Before: ~100 ms per call (500+ for five); after: well under 1 ms.
    expect(performance.now() - started).toBeLessThan(50)
  })

  it('still strips only SP and HTAB around the value', () => {
    expect(clientReadTimeoutMs({ 'x-stainless-read-timeout': ' \t2.5\t ' })).toBe(2500)
    expect(clientReadTimeoutMs({ 'x-stainless-read-timeout': '2.5\u00a0' })).toBeUndefined()
    expect(clientReadTimeoutMs({ 'x-stainless-read-timeout': '0.0' })).toBeUndefined()
  })
})
