import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'

const anthropic = dialects.anthropic

const body = (message: string) =>
  JSON.stringify({
    type: 'error',
    error: { type: 'invalid_request_error', message },
    request_id: 'req_011CUB2XUHWkFnQzxcKBbjpF',
  })

describe('Anthropic: input plus max_tokens over the context window', () => {
  // Verbatim (docker/docker-agent#569, anthropics/claude-code#228,
  // continuedev/continue#6080), with and without the backticks.
  it.each([
    'input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again',
    'input length and max_tokens exceed context limit: 198981 + 21333 > 200000, decrease input length or max_tokens and try again',
  ])('%s is context_too_long (a smaller request gets past it), not bad_request', (message) => {
    const e = anthropic.normalizeError({ status: 400, body: body(message) })
    expect(e).toMatchObject({
      kind: 'context_too_long',
      retryable: false,
      status: 400,
      providerCode: 'invalid_request_error',
    })
  })

  it('other invalid_request_error 400s stay bad_request', () => {
    const e = anthropic.normalizeError({
      status: 400,
      body: body('max_tokens: Field required'),
    })
    expect(e).toMatchObject({ kind: 'bad_request', retryable: false })
  })
})
