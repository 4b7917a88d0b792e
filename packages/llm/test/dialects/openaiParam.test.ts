import { describe, expect, it } from 'vitest'
import { normalizeOpenAIError } from '../../src/dialects/openai/normalizeOpenAIError.js'

describe("OpenAI's param", () => {
  it('is carried on the normalised error when the provider names a field, absent when null', () => {
    const named = normalizeOpenAIError({
      status: 400,
      headers: {},
      body: JSON.stringify({
        error: {
          message: 'bad',
          type: 'invalid_request_error',
          param: 'messages[0].content',
          code: 'invalid_value',
        },
      }),
    })
    expect(named).toMatchObject({ kind: 'bad_request', param: 'messages[0].content' })
    const none = normalizeOpenAIError({
      status: 400,
      headers: {},
      body: JSON.stringify({
        error: { message: 'bad', type: 'invalid_request_error', param: null },
      }),
    })
    expect(none).not.toHaveProperty('param')
  })
})
