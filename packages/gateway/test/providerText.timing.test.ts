import { describe, expect, it } from 'vitest'
import { toOpenAIError } from '../src/openai/encode.js'

/** A hostile message's cost grows with its length, not its square. */
describe('providerText on a huge message', () => {
  it('"a.a.a.…" (what a URL’s scheme starts with at every letter) is read in linear time', () => {
    const timed = (chars: number) => {
      const started = performance.now()
      const { body } = toOpenAIError({
        kind: 'bad_request',
        retryable: false,
        status: 400,
        message: 'a.'.repeat(chars / 2),
      })
      expect(body.error.message.length).toBeLessThanOrEqual(500)
      return performance.now() - started
    }
    // 100 000 characters took 3.3 s, 1 MB over 10 minutes.
    expect(timed(100_000)).toBeLessThan(250)
    expect(timed(1_000_000)).toBeLessThan(1000)
  })
})
