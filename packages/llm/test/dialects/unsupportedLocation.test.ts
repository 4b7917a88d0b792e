import { type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { WaitClock } from '../support/waitClock.js'
import { errorOver } from './support/errorOver.js'

const fakes = useFakes()

/**
 * What each provider answers a request from a country or region it does not
 * serve, whichever key it carries (verbatim: OpenAI's in songquanpeng/one-api#1692,
 * home-assistant/core#120072; Gemini's in google-gemini/gemini-cli#24641).
 * Anthropic's 403 `forbidden` "Request not allowed" is not among them: it
 * comes for a region, and for one credential's account or role too, so it
 * stays `auth` (the next key is tried).
 */
const OPENAI_REGION = {
  error: {
    code: 'unsupported_country_region_territory',
    message: 'Country, region, or territory not supported',
    param: null,
    type: 'request_forbidden',
  },
}
const GEMINI_LOCATION = {
  error: {
    code: 400,
    message: 'User location is not supported for the API use.',
    status: 'FAILED_PRECONDITION',
  },
}

describe("a provider that refuses this host's country or region", () => {
  it.each([
    ['openai', 403, OPENAI_REGION, 'unsupported_country_region_territory'],
    ['gemini', 400, GEMINI_LOCATION, 'FAILED_PRECONDITION'],
  ] as const)(
    '%s: judges no key (not auth, not a quota), is not retried, and says why',
    async (name, status, body, code) => {
      const e = dialects[name].normalizeError(await errorOver(status, JSON.stringify(body)))
      expect(e).toMatchObject({
        kind: 'server_error',
        retryable: false,
        status,
        providerCode: code,
      })
      expect(e?.message).toContain(body.error.message)
      expect(e?.message).toMatch(/country or region.*no key is at fault/)
    },
  )

  it('x-should-retry: true does not make it retryable: the host stays where it is', () => {
    const e = dialects.openai.normalizeError({
      status: 403,
      headers: new Headers({ 'x-should-retry': 'true' }),
      body: JSON.stringify(OPENAI_REGION),
    })
    expect(e).toMatchObject({ kind: 'server_error', retryable: false })
  })

  it('Gemini through its OpenAI-compatible endpoint reads the same', () => {
    const e = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify([GEMINI_LOCATION]),
    })
    expect(e).toMatchObject({ kind: 'server_error', retryable: false })
  })

  it('what is the key’s or the project’s keeps its kind', () => {
    // Enabling billing on the project lifts it: the project's, as before.
    const freeTier = dialects.gemini.normalizeError({
      status: 400,
      body: JSON.stringify({
        error: {
          code: 400,
          message:
            'Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.',
          status: 'FAILED_PRECONDITION',
        },
      }),
    })
    expect(freeTier).toMatchObject({ kind: 'quota_exhausted', retryable: false })
    // The location refused to an unbilled project: linking billing lifts it
    // (u14app/neo-chat#7). Read as the host's, that key was never retired
    // and every call went to it, where another key's project answered.
    const unbilled = dialects.gemini.normalizeError({
      status: 400,
      body: JSON.stringify({
        error: {
          code: 400,
          message:
            'User location is not supported for the API use without a billing account linked.',
          status: 'FAILED_PRECONDITION',
        },
      }),
    })
    expect(unbilled).toMatchObject({ kind: 'quota_exhausted', retryable: false })
    const anthropicForbidden = dialects.anthropic.normalizeError({
      status: 403,
      body: JSON.stringify({ error: { type: 'forbidden', message: 'Request not allowed' } }),
    })
    expect(anthropicForbidden).toMatchObject({ kind: 'auth', retryable: false })
    const permission = dialects.anthropic.normalizeError({
      status: 403,
      body: JSON.stringify({
        type: 'error',
        error: {
          type: 'permission_error',
          message: 'Your API key does not have permission to use the specified resource.',
        },
      }),
    })
    expect(permission).toMatchObject({ kind: 'auth', retryable: false })
  })

  // Read as `auth`, the 403 retired the key the call used and moved to the
  // provider's next key — refused the same way, and retired too: with the
  // default admission (`retireMs` unlimited) every key of the provider was
  // out until a restart, long after the host's egress was moved to a
  // supported region, and each call's record said "this key was rejected".
  it('through callModel: one request, no key retired, the fallback answers; once the host is served again the keys still work', async () => {
    // Nothing here waits: the clock only has to stand still.
    const admission = new Admission({
      clock: new WaitClock(1_000),
      defaultNeededMs: 0,
      logger: { warn: () => {} },
    })
    let served = false
    const byRegion = (r: RecordedRequest) =>
      served ? reply.text(`served with ${r.apiKey}`) : reply.error(403, OPENAI_REGION)
    const blocked = await fakes.start({ dialect: 'openai', reply: byRegion })
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('from the backup') })
    const openai = fakes.adapter(
      openAICompatible({
        baseURL: blocked.baseURL,
        apiKeys: ['sk-first-0000000001', 'sk-second-000000002'],
        model: 'gpt-4o',
      }),
    )
    const other = fakes.adapter(
      openAICompatible({
        baseURL: backup.baseURL,
        apiKey: 'sk-backup-00000003',
        model: 'other',
        name: 'other',
      }),
    )
    const records: AttemptRecord[] = []
    const first = await callModel({
      models: [openai, other],
      request: { messages: [user('hi')], maxTokens: 8 },
      retry: { delay: FAST_RETRIES },
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    expect(first.text).toBe('from the backup')
    expect(blocked.requests).toHaveLength(1)
    expect(records[0]).toMatchObject({
      errorKind: 'server_error',
      decision: 'fallback',
      status: 403,
    })
    expect(records[0]?.reason).not.toMatch(/key/)

    served = true
    const second = await callModel({
      models: [openai],
      request: { messages: [user('hi')], maxTokens: 8 },
      retry: { delay: FAST_RETRIES },
      limits: { admission },
    })
    expect(second.text).toMatch(/^served with sk-/)
  })
})
