import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { InvalidChatRequestError } from '../../src/errors/InvalidChatRequestError.js'

const build = (seed: number) =>
  dialects.gemini.buildRequest(
    { maxTokens: 10, messages: [{ role: 'user', content: 'hi' }], extra: { seed } },
    'gemini-2.5-flash',
  ).body as { generationConfig: Record<string, unknown> }

describe('a seed for Gemini (generationConfig.seed is an int32)', () => {
  it('goes as it is from -2^31 to 2^31-1, 0 included', () => {
    for (const seed of [0, 42, -1, 2 ** 31 - 1, -(2 ** 31)]) {
      expect(build(seed).generationConfig['seed']).toBe(seed)
    }
  })

  it('is refused naming it beyond that (Gemini answers 400 "(TYPE_INT32)"), not sent', () => {
    for (const seed of [2 ** 31, 3898845386, -(2 ** 31) - 1, Number.MAX_SAFE_INTEGER]) {
      let thrown: unknown
      try {
        build(seed)
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(InvalidChatRequestError)
      expect((thrown as InvalidChatRequestError).field).toBe('seed')
      expect((thrown as Error).message).toContain(String(seed))
    }
  })
})
