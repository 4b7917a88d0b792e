import { describe, expect, it } from 'vitest'
import { anthropicErrors } from '../../src/providers/index.js'

/**
 * Which Anthropic error bodies name `details`, as the API sends them today:
 * `"details": null` ahead of the type on every error the Messages API
 * answers — `invalid_request_error` (real bodies: "Output blocked by content
 * filtering policy", "Your credit balance is too low…", "context reduction
 * is suggested", each `{"type":"error","error":{"details":null,"type":
 * "invalid_request_error",…},"request_id":"req_011C…"}`), `rate_limit_error`,
 * `api_error` ("Internal server error"), `overloaded_error` — and none at
 * all on a rejected key (live 401s of 2026: `{"type":"error","error":{"type":
 * "authentication_error","message":"invalid x-api-key"},"request_id":…}`).
 * The spend cap's `details` is an object (`error_code`).
 */
const errorOf = (reply: { body: unknown }) =>
  (reply.body as { error: Record<string, unknown> }).error

describe('Anthropic error bodies: error.details', () => {
  it.each([
    ['invalidRequest', anthropicErrors.invalidRequest()],
    ['promptTooLong', anthropicErrors.promptTooLong()],
    ['usageLimitReached', anthropicErrors.usageLimitReached()],
    ['organizationDisabled', anthropicErrors.organizationDisabled()],
    ['rateLimited', anthropicErrors.rateLimited()],
    ['monthlySpendLimit', anthropicErrors.monthlySpendLimit()],
    ['apiError', anthropicErrors.apiError()],
    ['overloaded', anthropicErrors.overloaded()],
    ['outputBlocked', anthropicErrors.outputBlocked()],
  ])('%s: details is null, its first key', (_name, reply) => {
    const error = errorOf(reply)
    expect(Object.keys(error)).toEqual(['details', 'type', 'message'])
    expect(error['details']).toBeNull()
  })

  it('the in-stream overload carries the same body', () => {
    const error = errorOf(anthropicErrors.overloadedInStream().streamError as { body: unknown })
    expect(error).toEqual({ details: null, type: 'overloaded_error', message: 'Overloaded' })
  })

  it('the output filter in a stream carries the 400’s body, after the tokens asked for', () => {
    const reply = anthropicErrors.outputBlockedInStream({ afterTokens: 3 })
    expect(reply.streamError?.afterTokens).toBe(3)
    expect(errorOf(reply.streamError as { body: unknown })).toEqual(
      errorOf(anthropicErrors.outputBlocked()),
    )
    expect(errorOf(anthropicErrors.outputBlocked())['message']).toBe(
      'Output blocked by content filtering policy',
    )
    expect(() => anthropicErrors.outputBlockedInStream({ afterToken: 3 } as object)).toThrow(
      'unknown option "afterToken" (did you mean afterTokens?)',
    )
  })

  it('a rejected key names no details, as the live 401 does', () => {
    expect(errorOf(anthropicErrors.authentication())).toEqual({
      type: 'authentication_error',
      message: 'invalid x-api-key',
    })
  })

  it("the spend cap's details is its error code", () => {
    expect(errorOf(anthropicErrors.spendCapReached())['details']).toEqual({
      error_code: 'enforced_spend_limit_reached',
    })
  })

  it('the monthly spend limit: a rate_limit_error in its own words, retry-after minutes long, no error code', () => {
    const reply = anthropicErrors.monthlySpendLimit()
    expect(reply.status).toBe(429)
    expect(errorOf(reply)).toEqual({
      details: null,
      type: 'rate_limit_error',
      message:
        "This request would exceed your account's monthly spend limit. Please try again later.",
    })
    expect(reply.headers).toMatchObject({ 'retry-after': '600', 'x-should-retry': 'true' })
    expect(anthropicErrors.monthlySpendLimit({ retryAfterS: 3600 }).headers?.['retry-after']).toBe(
      '3600',
    )
  })
})
