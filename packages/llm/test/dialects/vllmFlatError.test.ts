import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'

// vLLM before 0.10.1 and SGLang answer OpenAI's error fields at the top level,
// marked `"object": "error"` (vllm-project/vllm#12886); docs/dialects.md reads
// their "maximum context length" as context_too_long. Unread, it was a
// bad_request whose message was the raw JSON, the recovery never asked.
const flat = (message: string, code: number) =>
  JSON.stringify({
    object: 'error',
    message,
    type: code === 404 ? 'NotFoundError' : 'BadRequestError',
    param: null,
    code,
  })

describe("vLLM's and SGLang's top-level error body", () => {
  it('an over-long prompt is context_too_long, with the provider message, not the raw JSON', () => {
    const message =
      "This model's maximum context length is 2048 tokens. However, you requested 2723 tokens (1699 in the messages, 1024 in the completion). Please reduce the length of the messages or completion."
    const e = dialects.openai.normalizeError({ status: 400, body: flat(message, 400) })
    expect(e).toMatchObject({
      kind: 'context_too_long',
      retryable: false,
      status: 400,
      providerCode: '400',
    })
    expect(e?.message).toBe(message)
  })

  it('a missing model keeps not_found, its message read', () => {
    const e = dialects.openai.normalizeError({
      status: 404,
      body: flat('The model `llama` does not exist.', 404),
    })
    expect(e).toMatchObject({ kind: 'not_found', providerCode: '404' })
    expect(e?.message).toBe('The model `llama` does not exist.')
  })

  it('a nested body is read as before', () => {
    const e = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify({
        error: {
          message: "This model's maximum context length is 10 tokens.",
          type: 'BadRequestError',
          code: 400,
        },
      }),
    })
    expect(e).toMatchObject({ kind: 'context_too_long' })
  })
})
