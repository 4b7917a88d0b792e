import { describe, expect, it } from 'vitest'
import type { DialectName } from '../../src/dialects/Dialect.js'
import { dialects } from '../../src/dialects/dialects.js'

/**
 * A 503 or 529 whose body names only a generic server error — what OpenAI
 * sends for "The engine is currently overloaded" — is an overload in the
 * normalised error itself, for every dialect: admission already cooled the
 * whole provider for it (any 503 is an overload there), while the retry
 * path, reading `server_error`, planned a backoff retry that the cooldown
 * then held back. A body that names something more specific keeps it.
 */
const generic: ReadonlyArray<readonly [DialectName, unknown]> = [
  [
    'openai',
    {
      error: {
        message: 'The engine is currently overloaded, please try again later',
        type: 'server_error',
        param: null,
        code: null,
      },
    },
  ],
  ['deepseek', { error: { message: 'Service Unavailable', type: 'server_error', code: null } }],
  ['qwen', { code: 'InternalError', message: 'An internal error has occured', request_id: 'r1' }],
  ['ernie', { error_code: 1, error_msg: 'Unknown error' }],
  ['doubao', { error: { code: 'InternalServiceError', message: 'internal', type: 'Internal' } }],
  ['anthropic', { type: 'error', error: { type: 'api_error', message: 'Internal server error' } }],
  ['gemini', { error: { code: 503, message: 'Internal error encountered.', status: 'INTERNAL' } }],
]

describe('a 503 or 529 labelled a server error is an overload, in every dialect', () => {
  it.each(generic)(
    '%s: 503 and 529 → overloaded (retryable); the same body on a 500 stays server_error',
    (name, json) => {
      const body = JSON.stringify(json)
      for (const status of [503, 529]) {
        expect(dialects[name].normalizeError({ status, body })).toMatchObject({
          kind: 'overloaded',
          retryable: true,
          status,
        })
      }
      expect(dialects[name].normalizeError({ status: 500, body })).toMatchObject({
        kind: 'server_error',
        status: 500,
      })
    },
  )

  it('a 503 whose body names a more specific kind keeps it', () => {
    const openai = (code: string, type = 'invalid_request_error') =>
      JSON.stringify({ error: { message: code, type, param: null, code } })
    const at503 = (name: DialectName, body: string) =>
      dialects[name].normalizeError({ status: 503, body })?.kind
    expect(at503('openai', openai('invalid_api_key'))).toBe('auth')
    expect(at503('openai', openai('insufficient_quota'))).toBe('quota_exhausted')
    expect(at503('openai', openai('context_length_exceeded'))).toBe('context_too_long')
    expect(at503('openai', openai('rate_limit_exceeded', 'requests'))).toBe('rate_limited')
    expect(
      at503(
        'anthropic',
        JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'slow' } }),
      ),
    ).toBe('rate_limited')
  })

  it('a 429 labelled a server error is a rate limit, and reads the reset headers as one', () => {
    const e = dialects.openai.normalizeError({
      status: 429,
      headers: { 'x-ratelimit-reset-requests': '2s' },
      body: JSON.stringify({ error: { message: 'busy', type: 'server_error', code: null } }),
    })
    expect(e).toMatchObject({ kind: 'rate_limited', retryable: true, retryAfterMs: 2000 })
  })

  it('x-should-retry still decides whether it is retried', () => {
    const e = dialects.openai.normalizeError({
      status: 503,
      headers: { 'x-should-retry': 'false' },
      body: JSON.stringify({ error: { message: 'down', type: 'server_error', code: null } }),
    })
    expect(e).toMatchObject({ kind: 'overloaded', retryable: false })
  })
})
