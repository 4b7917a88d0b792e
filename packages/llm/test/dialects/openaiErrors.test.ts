import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { errorOver } from './support/errorOver.js'

const openai = dialects.openai
const deepseek = dialects.deepseek

const body = (code: string | null, type: string, message: string) =>
  JSON.stringify({ error: { message, type, param: null, code } })

describe('OpenAI errors', () => {
  it('a 429 insufficient_quota is permanent (quota_exhausted), not a rate limit', async () => {
    const e = openai.normalizeError(
      await errorOver(
        429,
        body(
          'insufficient_quota',
          'insufficient_quota',
          'You exceeded your current quota, please check your plan and billing details.',
        ),
      ),
    )
    expect(e).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
      status: 429,
      providerCode: 'insufficient_quota',
    })
  })

  // OpenAI's other account states on a 429 (BerriAI/litellm#2743,
  // RamiAwar/dataline#175, ztjhz/BetterChatGPT#105), older ones with `code: null`
  // and only `type` set: no wait lifts them.
  it('a 429 billing_not_active is a spent quota and access_terminated a refused key, with or without a code: neither retried', () => {
    const states = [
      [
        'billing_not_active',
        'Your account is not active, please check your billing details on our website.',
        'quota_exhausted',
      ],
      [
        'access_terminated',
        'Your access was terminated due to violation of our policies, please check your email for more information.',
        'auth',
      ],
    ] as const
    for (const [name, message, kind] of states) {
      for (const code of [name, null]) {
        const e = openai.normalizeError({ status: 429, body: body(code, name, message) })
        expect(e, `${name}, code ${code}`).toMatchObject({
          kind,
          retryable: false,
          status: 429,
          providerCode: name,
        })
      }
    }
  })

  it('a 429 rate_limit_exceeded is retryable and waits for the exhausted limit’s reset header', async () => {
    const e = openai.normalizeError(
      await errorOver(
        429,
        body(
          'rate_limit_exceeded',
          'tokens',
          'Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.',
        ),
        {
          'x-ratelimit-remaining-requests': '499',
          'x-ratelimit-reset-requests': '120ms',
          'x-ratelimit-remaining-tokens': '0',
          'x-ratelimit-reset-tokens': '6m0s',
        },
      ),
    )
    expect(e).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      retryAfterMs: 360_000,
      providerCode: 'rate_limit_exceeded',
    })
  })

  it('context_length_exceeded and content_policy_violation are permanent 400s of their own kind', () => {
    const ctx = openai.normalizeError({
      status: 400,
      body: body(
        'context_length_exceeded',
        'invalid_request_error',
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
      ),
    })
    const policy = openai.normalizeError({
      status: 400,
      body: body(
        'content_policy_violation',
        'invalid_request_error',
        'Your request was rejected as a result of our safety system.',
      ),
    })
    expect(ctx).toMatchObject({ kind: 'context_too_long', retryable: false })
    expect(policy).toMatchObject({ kind: 'content_policy', retryable: false })
  })

  // A reasoning model's safety check on the prompt, a 400 (t0-1#69,
  // one-api#2101; platform.openai.com/docs/guides/reasoning#advice-on-prompting).
  // As the status's bad_request the gateway told its client "invalid_request"
  // for a prompt OpenAI flagged, not the refusal it is. After a 200 (mid-stream)
  // it stays the fallback-worthy server error `inStreamRequestError` pins.
  it('a 400 invalid_prompt ("flagged as potentially violating our usage policy") is a content-policy refusal', () => {
    const flagged = body(
      'invalid_prompt',
      'invalid_request_error',
      'Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with a different prompt: https://platform.openai.com/docs/guides/reasoning#advice-on-prompting',
    )
    expect(openai.normalizeError({ status: 400, body: flagged })).toMatchObject({
      kind: 'content_policy',
      retryable: false,
      status: 400,
      providerCode: 'invalid_prompt',
    })
    expect(openai.normalizeStreamError({ event: undefined, data: flagged })).toMatchObject({
      kind: 'server_error',
      retryable: false,
    })
  })

  // One field's string over its limit ("Expected a string with maximum
  // length 10485760", a tool description over 1024): no context window is
  // involved, so not context_length_exceeded — the field is named.
  it('string_above_max_length is a bad request naming the field, not the context window', () => {
    const e = openai.normalizeError({
      status: 400,
      body: JSON.stringify({
        error: {
          message:
            "Invalid 'tools[0].function.description': string too long. Expected a string with maximum length 1024, but got a string with length 1500 instead.",
          type: 'invalid_request_error',
          param: 'tools[0].function.description',
          code: 'string_above_max_length',
        },
      }),
    })
    expect(e).toMatchObject({
      kind: 'bad_request',
      retryable: false,
      param: 'tools[0].function.description',
    })
  })

  it('x-should-retry: false stops a 500 from being retried; x-should-retry: true makes a 400 retryable', async () => {
    const e500 = openai.normalizeError(
      await errorOver(
        500,
        body(null, 'server_error', 'The server had an error while processing your request.'),
        { 'x-should-retry': 'false' },
      ),
    )
    expect(e500).toMatchObject({ kind: 'server_error', retryable: false })
    const e400 = openai.normalizeError({
      status: 400,
      headers: { 'X-Should-Retry': 'true' },
      body: '',
    })
    expect(e400).toMatchObject({ kind: 'bad_request', retryable: true })
  })

  it('an invalid key is auth, and the key echoed in the message never comes back', () => {
    const e = openai.normalizeError({
      status: 401,
      body: body(
        'invalid_api_key',
        'invalid_request_error',
        'Incorrect API key provided: sk-proj-abc123DEF456ghi789. You can find your API key at https://platform.openai.com/account/api-keys.',
      ),
    })
    expect(e).toMatchObject({ kind: 'auth', retryable: false })
    expect(e?.message).not.toContain('abc123DEF456ghi789')
  })

  it("a 403 that is not JSON (a firewall's page) judges the request, not the key: not auth, not retried", () => {
    const cloudflare = '<html><head><title>Attention Required! | Cloudflare</title></head></html>'
    // Every dialect reads it alike: the page comes from in front of the provider.
    for (const dialect of Object.values(dialects)) {
      for (const page of [cloudflare, 'error code: 1020', '']) {
        const e = dialect.normalizeError({ status: 403, body: page })
        expect(e, `${dialect.name}: ${JSON.stringify(page)}`).toMatchObject({
          kind: 'server_error',
          retryable: false,
          status: 403,
        })
        expect(e?.message).toContain('no key judged')
      }
    }
    // The provider's own JSON 403 still says the key is refused.
    const own = openai.normalizeError({
      status: 403,
      body: body(null, 'invalid_request_error', 'Project does not have access'),
    })
    expect(own).toMatchObject({ kind: 'auth', retryable: false })
  })

  it("a web page with a bad request's status (a proxy's 400) is refused in front of the provider: not the client's bad_request, not retried", () => {
    const nginx =
      '<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n</body>\r\n</html>\r\n'
    for (const dialect of Object.values(dialects)) {
      for (const [status, page] of [
        [400, nginx],
        [422, '<!DOCTYPE html><html><body>Unprocessable</body></html>'],
        [431, '<html><head><title>431 Request Header Fields Too Large</title></head></html>'],
        // Go's net/http (Caddy, Traefik, one-api) says the same thing as text.
        [400, 'Client sent an HTTP request to an HTTPS server.\n'],
      ] as const) {
        const e = dialect.normalizeError({ status, body: page })
        expect(e, `${dialect.name} ${status}`).toMatchObject({
          kind: 'server_error',
          retryable: false,
          status,
        })
        expect(e?.message).toContain('refused in front of the provider')
      }
      // Plain text or nothing with a 400 still classifies by status.
      for (const body of ['Bad Request', '']) {
        expect(dialect.normalizeError({ status: 400, body })).toMatchObject({ kind: 'bad_request' })
      }
    }
  })

  it('a 200 chat completion is a success; a 200 carrying an error object is not', () => {
    expect(
      openai.normalizeError({ status: 200, body: JSON.stringify({ id: 'x', choices: [] }) }),
    ).toBeUndefined()
    expect(
      openai.normalizeError({
        status: 200,
        body: body('rate_limit_exceeded', 'requests', 'Rate limit reached'),
      }),
    ).toMatchObject({ kind: 'rate_limited', retryable: true, status: 200 })
  })

  it('an error object in a data frame after the 200 is a stream error', () => {
    expect(
      openai.normalizeStreamError({
        event: undefined,
        data: body(null, 'server_error', 'The server had an error'),
      }),
    ).toMatchObject({ kind: 'server_error', retryable: true, status: 200 })
    expect(
      openai.normalizeStreamError({
        event: undefined,
        data: '{"choices":[{"delta":{"content":"hi"}}]}',
      }),
    ).toBeUndefined()
  })

  it('a body that is HTML or empty still classifies by status, with Retry-After in seconds', async () => {
    const e = openai.normalizeError(
      await errorOver(503, '<html>503 Service Unavailable</html>', { 'retry-after': '7' }),
    )
    expect(e).toMatchObject({ kind: 'overloaded', retryable: true, retryAfterMs: 7000 })
    expect(openai.normalizeError({ status: 408, body: '' })).toMatchObject({
      kind: 'timeout',
      retryable: true,
      message: 'HTTP 408',
    })
    expect(openai.normalizeError({ status: 409, body: '' })).toMatchObject({ retryable: true })
    expect(openai.normalizeError({ status: 404, body: '' })).toMatchObject({
      kind: 'not_found',
      retryable: false,
    })
    expect(openai.normalizeError({ status: 422, body: '' })).toMatchObject({
      kind: 'bad_request',
      retryable: false,
    })
  })
})

describe('the "overloaded" text check', () => {
  const saying = (message: string) =>
    JSON.stringify({ error: { message, type: 'invalid_request_error', code: null } })

  it.each([400, 404, 413, 422, 429])(
    'never makes a %i an overload: a 4xx is an answer about the request',
    (status) => {
      const e = openai.normalizeError({
        status,
        body: saying("Invalid schema for function 'is_overloaded': 'type' is required"),
      })
      expect(e?.kind).not.toBe('overloaded')
    },
  )

  it('still reads 5xx answers and errors inside a 200', () => {
    const body = saying('The engine is currently overloaded')
    expect(openai.normalizeError({ status: 500, body })).toMatchObject({ kind: 'overloaded' })
    expect(openai.normalizeStreamError({ event: 'error', data: body })).toMatchObject({
      kind: 'overloaded',
      status: 200,
    })
  })
})

describe('DeepSeek errors', () => {
  it('402 Insufficient Balance is permanent', async () => {
    const e = deepseek.normalizeError(
      await errorOver(
        402,
        JSON.stringify({
          error: {
            message: 'Insufficient Balance',
            type: 'unknown_error',
            param: null,
            code: 'invalid_request_error',
          },
        }),
      ),
    )
    expect(e).toMatchObject({ kind: 'quota_exhausted', retryable: false, status: 402 })
  })

  it('429 is a retryable rate limit and 503 Server overloaded is retryable overload', () => {
    expect(
      deepseek.normalizeError({
        status: 429,
        body: JSON.stringify({
          error: {
            message: 'Rate Limit Reached',
            type: 'rate_limit_error',
            param: null,
            code: null,
          },
        }),
      }),
    ).toMatchObject({ kind: 'rate_limited', retryable: true })
    expect(
      deepseek.normalizeError({
        status: 503,
        body: JSON.stringify({
          error: { message: 'Server overloaded', type: 'server_error', param: null, code: null },
        }),
      }),
    ).toMatchObject({ kind: 'overloaded', retryable: true })
  })

  it('422 invalid parameters is a permanent bad request', () => {
    expect(
      deepseek.normalizeError({
        status: 422,
        body: JSON.stringify({
          error: {
            message: 'Invalid Parameters',
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_request_error',
          },
        }),
      }),
    ).toMatchObject({ kind: 'bad_request', retryable: false })
  })
})

describe('a provider 404', () => {
  it('is never retryable, even with x-should-retry: true (a model the provider does not know stays unknown)', () => {
    const e = dialects.openai.normalizeError({
      status: 404,
      headers: new Headers({ 'x-should-retry': 'true' }),
      body: JSON.stringify({
        error: {
          message: 'The model `gpt-x` does not exist or you do not have access to it.',
          type: 'invalid_request_error',
          code: 'model_not_found',
        },
      }),
    })
    expect(e).toMatchObject({ kind: 'not_found', retryable: false })
  })
})
