import { describe, expect, it } from 'vitest'
import { anthropicErrors } from '../../src/providers/errors/anthropicErrors.js'
import { doubaoErrors } from '../../src/providers/errors/doubaoErrors.js'
import { ernieErrors } from '../../src/providers/errors/ernieErrors.js'
import { openAIErrors } from '../../src/providers/errors/openAIErrors.js'

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
  })
})
