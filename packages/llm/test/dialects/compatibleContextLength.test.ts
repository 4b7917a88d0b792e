import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'

const deepseek = dialects.deepseek

// DeepSeek's over-long prompt, verbatim in its issue trackers
// (FoundationAgents/OpenManus#79, BerriAI/litellm#10431, evalstate/fast-agent#621):
// no `context_length_exceeded` code, only OpenAI's words and a generic code.
const body = (message: string) =>
  JSON.stringify({
    error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request_error' },
  })

describe("a context-window refusal in OpenAI's words, under no code of its own", () => {
  it('a 400 "maximum context length" is context_too_long (recoverable by a smaller request), not bad_request', () => {
    const e = deepseek.normalizeError({
      status: 400,
      body: body(
        "This model's maximum context length is 131072 tokens. However, you requested 139867 tokens (131675 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
      ),
    })
    expect(e).toMatchObject({
      kind: 'context_too_long',
      retryable: false,
      status: 400,
      providerCode: 'invalid_request_error',
    })
  })

  it("vLLM's words under the openai dialect (`BadRequestError`, `code: 400`) are context_too_long too", () => {
    const e = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "This model's maximum context length is 32768 tokens. However, you requested 41648 tokens (37552 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.",
          type: 'BadRequestError',
          param: null,
          code: 400,
        },
      }),
    })
    expect(e).toMatchObject({ kind: 'context_too_long', retryable: false })
  })

  it('a body that does not blame the request (a proxy’s 503 with no type or code) keeps its status’s kind', () => {
    const e = dialects.openai.normalizeError({
      status: 503,
      body: JSON.stringify({
        error: { message: 'upstream: maximum context length is 8192', type: null, code: null },
      }),
    })
    expect(e).toMatchObject({ kind: 'overloaded', retryable: true })
  })

  it('a code that names its kind keeps it, whatever the words', () => {
    const e = deepseek.normalizeError({
      status: 429,
      body: JSON.stringify({
        error: {
          message: 'Rate limit reached; maximum context length is not the problem',
          type: 'rate_limit_exceeded',
          param: null,
          code: 'rate_limit_exceeded',
        },
      }),
    })
    expect(e).toMatchObject({ kind: 'rate_limited', retryable: true })
  })

  it('other invalid_request_error 400s stay bad_request', () => {
    const e = deepseek.normalizeError({
      status: 400,
      body: body('Invalid max_tokens value, the valid range of max_tokens is [1, 8192]'),
    })
    expect(e).toMatchObject({ kind: 'bad_request', retryable: false })
  })
})
