import { describe, expect, it } from 'vitest'
import { anthropicErrors } from '../../src/providers/errors/anthropicErrors.js'
import { doubaoErrors } from '../../src/providers/errors/doubaoErrors.js'
import { ernieErrors } from '../../src/providers/errors/ernieErrors.js'
import { geminiErrors } from '../../src/providers/errors/geminiErrors.js'
import { openAIErrors } from '../../src/providers/errors/openAIErrors.js'
import { qwenErrors } from '../../src/providers/errors/qwenErrors.js'

// A limit the builder does not know scripted something else, silently:
// `ernieErrors.rateLimited('RPM')` answered a 200 `{"id":…}` — no error at
// all, a success to the ernie dialect —, `doubaoErrors.rateLimited('RPM')` a
// code Ark never sends beside the TPM message, `openAIErrors.rateLimited({
// limit: 'token' })` the request limit, and `anthropicErrors.rateLimited({
// limit: 'tokens' })` crashed with "Cannot read properties of undefined".
// Refused as v2Refused's, quotaExceeded's and modelAccessDenied's are.
describe('an error builder given a limit it does not know', () => {
  it.each([
    [
      'ernieErrors.rateLimited',
      () => ernieErrors.rateLimited('RPM' as 'rpm'),
      /rpm, tpm, qps, daily, got RPM/,
    ],
    [
      'ernieErrors.rateLimited (inherited name)',
      () => ernieErrors.rateLimited('constructor' as 'rpm'),
      /got constructor/,
    ],
    [
      'ernieErrors.v2RateLimited',
      () => ernieErrors.v2RateLimited('qps' as 'rpm'),
      /rpm, tpm, got qps/,
    ],
    [
      'doubaoErrors.rateLimited',
      () => doubaoErrors.rateLimited('RPM' as 'EndpointRPMExceeded'),
      /got RPM/,
    ],
    [
      'anthropicErrors.rateLimited',
      () => anthropicErrors.rateLimited({ limit: 'tokens' as 'input_tokens' }),
      /requests, input_tokens, output_tokens, got tokens/,
    ],
    [
      'anthropicErrors.rateLimited (inherited name)',
      () => anthropicErrors.rateLimited({ limit: 'toString' as 'requests' }),
      /got toString/,
    ],
    [
      'openAIErrors.rateLimited',
      () => openAIErrors.rateLimited({ limit: 'token' as 'tokens' }),
      /limit must be one of requests, tokens, got token/,
    ],
    // A code Model Studio does not send answered a body with no message.
    [
      'qwenErrors.throttling',
      () => qwenErrors.throttling('Throttling.X' as 'Throttling'),
      /qwenErrors\.throttling\(\): code must be one of Throttling, Throttling\.RateQuota, Throttling\.AllocationQuota, got Throttling\.X/,
    ],
    [
      'qwenErrors.throttlingIn200',
      () => qwenErrors.throttlingIn200('rate' as 'Throttling'),
      /got rate/,
    ],
    [
      'qwenErrors.throttlingInStream',
      () => qwenErrors.throttlingInStream({ code: 'toString' as 'Throttling' }),
      /got toString/,
    ],
  ])('%s throws a TypeError naming the values it takes', (_name, build, message) => {
    expect(build).toThrow(TypeError)
    expect(build).toThrow(message)
  })

  it('still builds every documented limit', () => {
    for (const which of ['rpm', 'tpm', 'qps', 'daily'] as const) {
      expect(ernieErrors.rateLimited(which).body).toHaveProperty('error_code')
    }
    for (const which of ['rpm', 'tpm'] as const)
      expect(ernieErrors.v2RateLimited(which).status).toBe(429)
    expect(doubaoErrors.rateLimited('EndpointTPMExceeded').status).toBe(429)
    for (const limit of ['requests', 'input_tokens', 'output_tokens'] as const) {
      expect(anthropicErrors.rateLimited({ limit }).status).toBe(429)
    }
    expect(openAIErrors.rateLimited({ limit: 'requests' }).status).toBe(429)
    expect(openAIErrors.rateLimited({ limit: 'tokens' }).status).toBe(429)
    for (const code of [
      'Throttling',
      'Throttling.RateQuota',
      'Throttling.AllocationQuota',
    ] as const) {
      expect(qwenErrors.throttling(code).body).toMatchObject({ code, message: expect.any(String) })
      expect(qwenErrors.throttlingIn200(code).status).toBe(200)
      expect(qwenErrors.throttlingInStream({ code }).kind).toBe('text')
    }
  })
})

// A wait that is not a finite number ≥ 0 was written as it came: NaN
// scripted `retry-after: NaN` and OpenAI's reset "in NaNs" (a client reads
// no wait), Anthropic's reset threw "Invalid time value" from toISOString
// far from the call, and '5' (a string from a table) was concatenated.
describe('an error builder given a wait that is not one', () => {
  it.each([
    [
      'openAIErrors.rateLimited retryAfterS NaN',
      () => openAIErrors.rateLimited({ retryAfterS: Number.NaN }),
      RangeError,
      'openAIErrors.rateLimited(): retryAfterS must be a number from 0 to 1000000000, got NaN',
    ],
    [
      'openAIErrors.rateLimited retryAfterMs -1',
      () => openAIErrors.rateLimited({ retryAfterMs: -1 }),
      RangeError,
      'openAIErrors.rateLimited(): retryAfterMs must be a number from 0 to 1000000000000, got -1',
    ],
    [
      'openAIErrors.rateLimited retryAfterS string',
      () => openAIErrors.rateLimited({ retryAfterS: '5' as never }),
      TypeError,
      /retryAfterS must be a number from 0 to 1000000000, got '5'/,
    ],
    [
      'anthropicErrors.rateLimited retryAfterS NaN',
      () => anthropicErrors.rateLimited({ retryAfterS: Number.NaN }),
      RangeError,
      'anthropicErrors.rateLimited(): retryAfterS must be a number from 0 to 1000000000, got NaN',
    ],
    [
      'anthropicErrors.rateLimited retryAfterS Infinity',
      () => anthropicErrors.rateLimited({ retryAfterS: Number.POSITIVE_INFINITY }),
      RangeError,
      /got Infinity/,
    ],
    [
      'anthropicErrors.monthlySpendLimit retryAfterS -5',
      () => anthropicErrors.monthlySpendLimit({ retryAfterS: -5 }),
      RangeError,
      /monthlySpendLimit\(\): retryAfterS must be a number from 0 to 1000000000, got -5/,
    ],
    // Past the largest Date: Anthropic's reset threw "Invalid time value"; OpenAI's read "InfinityhNaNmNaNs".
    [
      'anthropicErrors.rateLimited retryAfterS 9e12',
      () => anthropicErrors.rateLimited({ retryAfterS: 9e12 }),
      RangeError,
      /got 9000000000000/,
    ],
    [
      'openAIErrors.rateLimited retryAfterS 1e308',
      () => openAIErrors.rateLimited({ retryAfterS: 1e308 }),
      RangeError,
      /retryAfterS must be a number from 0 to 1000000000/,
    ],
    [
      "geminiErrors.resourceExhausted retryDelay 'NaNs'",
      () => geminiErrors.resourceExhausted({ retryDelay: 'NaNs' }),
      TypeError,
      /geminiErrors\.resourceExhausted\(\): retryDelay must be a duration as Gemini writes it/,
    ],
    [
      'geminiErrors.resourceExhausted retryDelay 34 (a number)',
      () => geminiErrors.resourceExhausted({ retryDelay: 34 as never }),
      RangeError,
      /retryDelay must be a duration as Gemini writes it \('34s', '0\.05s'\), got 34/,
    ],
    [
      "geminiErrors.resourceExhausted retryDelay '-5s'",
      () => geminiErrors.resourceExhausted({ retryDelay: '-5s' }),
      TypeError,
      /got '-5s'/,
    ],
  ])('%s throws naming the builder and the option', (_name, build, type, message) => {
    expect(build).toThrow(type)
    expect(build).toThrow(message)
  })

  it('still builds the waits the docs name, 0 included', () => {
    expect(openAIErrors.rateLimited({ retryAfterS: 0 }).headers?.['retry-after']).toBe('0')
    expect(openAIErrors.rateLimited({ retryAfterMs: 200 }).headers?.['retry-after-ms']).toBe('200')
    expect(anthropicErrors.rateLimited({ retryAfterS: 2.5 }).headers?.['retry-after']).toBe('2.5')
    expect(anthropicErrors.monthlySpendLimit().headers?.['retry-after']).toBe('600')
    expect(anthropicErrors.rateLimited({ retryAfterS: 1e9 }).status).toBe(429)
    expect(geminiErrors.resourceExhausted({ retryDelay: '58.934310785s' }).status).toBe(429)
  })
})

// The README: the builders that take options "also refuse a value that cannot
// be sent — … a count that is no whole number ≥ 0, a status outside 100–999".
// These returned their reply, refused only at `enqueue` (inside a script
// function: a 500 `reply_failed` when the fake answered); an `x-should-retry`
// of `no` or `0`, which the SDKs ignore, went out as written.
describe('an error builder given a value that cannot be sent', () => {
  it.each([
    [
      'openAIErrors.serverError status 1000',
      () => openAIErrors.serverError({ status: 1000 }),
      /openAIErrors\.serverError\(\): status/,
    ],
    [
      'openAIErrors.serverError shouldRetry',
      () => openAIErrors.serverError({ shouldRetry: 'no' as unknown as boolean }),
      /shouldRetry must be a boolean/,
    ],
    [
      'anthropicErrors.overloaded shouldRetry',
      () => anthropicErrors.overloaded({ shouldRetry: 0 as unknown as boolean }),
      /shouldRetry must be a boolean/,
    ],
    [
      'anthropicErrors.overloadedInStream -1',
      () => anthropicErrors.overloadedInStream({ afterTokens: -1 }),
      /afterTokens/,
    ],
    [
      'anthropicErrors.outputBlockedInStream NaN',
      () => anthropicErrors.outputBlockedInStream({ afterTokens: Number.NaN }),
      /afterTokens/,
    ],
    [
      'anthropicErrors.outputBlockedInStream text 5',
      () => anthropicErrors.outputBlockedInStream({ text: 5 as unknown as string }),
      /text must be a string/,
    ],
    [
      'qwenErrors.throttlingInStream "3"',
      () => qwenErrors.throttlingInStream({ afterTokens: '3' as unknown as number }),
      /afterTokens/,
    ],
  ])('%s throws a TypeError naming it', (_name, build, field) => {
    expect(build).toThrow(TypeError)
    expect(build).toThrow(field)
  })

  it('still builds the documented values', () => {
    expect(
      openAIErrors.serverError({ status: 503, shouldRetry: false }).headers?.['x-should-retry'],
    ).toBe('false')
    expect(anthropicErrors.overloaded({ shouldRetry: true }).headers?.['x-should-retry']).toBe(
      'true',
    )
    expect(anthropicErrors.overloadedInStream({ afterTokens: 2 }).streamError?.afterTokens).toBe(2)
    expect(qwenErrors.throttlingInStream({ afterTokens: 0 }).streamError?.afterTokens).toBe(0)
  })
})
