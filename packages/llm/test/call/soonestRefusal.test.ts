import { Deadline } from '@hourglass/core'
import { openAIErrors, type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { callModel } from '../../src/call/callModel.js'
import { isRateLimited, type RateLimitedError } from '../../src/errors/RateLimitedError.js'
import { useFakes, user } from './support/fakes.js'
import { manualAdmission } from './support/tpmLimited.js'

const fakes = useFakes()
const request = { messages: [user('x'.repeat(3000))], maxTokens: 10 }

/** Two providers at one fake: `pa` serves model `primary`, `pb` model `fallback`, each its 429s as queued per model. */
async function twoModels(retryAfterS: Record<string, number>) {
  const answer = (r: RecordedRequest) => {
    const s = retryAfterS[r.model as string]
    return s === undefined ? reply.text('ok') : openAIErrors.rateLimited({ retryAfterS: s })
  }
  const fake = await fakes.start({ dialect: 'openai', reply: answer })
  const pa = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'primary', name: 'pa' }),
  )
  const pb = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-b', model: 'fallback', name: 'pb' }),
  )
  return { fake, pa, pb }
}

async function refusal(run: Promise<unknown>): Promise<RateLimitedError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(isRateLimited(error)).toBe(true)
  return error as RateLimitedError
}

describe('admission turns every model away: the error says when the soonest can serve', () => {
  it('names the model back first, whatever the order of the list, with every refusal as causes', async () => {
    const { clock, admission } = manualAdmission()
    const { fake, pa, pb } = await twoModels({ primary: 2, fallback: 40 })
    // Each model's 429 starts its cooldown: pa 2 s, pb 40 s.
    for (const model of [pa, pb]) {
      using deadline = Deadline.after(500, { clock })
      await callModel({ models: [model], request, deadline, limits: { admission } }).catch(
        () => undefined,
      )
    }
    expect(fake.requests).toHaveLength(2)
    for (const models of [
      [pa, pb],
      [pb, pa],
    ]) {
      using deadline = Deadline.after(1000, { clock })
      const error = await refusal(callModel({ models, request, deadline, limits: { admission } }))
      expect([error.provider, error.model, error.kind]).toEqual(['pa', 'primary', 'rate_limited'])
      expect(error.retryAfterMs).toBe(2000)
      expect(error.retryAtMs).toBe(3000)
      expect(error.causes.map((c) => c.provider)).toEqual(models.map((m) => m.name))
      expect(error.causes.every((c) => isRateLimited(c.cause))).toBe(true)
      // The other model's refusal is in the message too, as ModelUnavailableError's are.
      expect(error.message).toContain('[pb/fallback: ')
    }
    expect(fake.requests).toHaveLength(2)
  })

  it('a model that would serve the request in 2 s is named, not a fallback that refuses it as too large for its TPM limit', async () => {
    const { clock, admission } = manualAdmission(
      new ProviderLimits({ limits: { pb: { tpm: 500 } }, logger: { warn: () => {} } }),
    )
    const { fake, pa, pb } = await twoModels({ primary: 2 })
    {
      using deadline = Deadline.after(500, { clock })
      await callModel({ models: [pa], request, deadline, limits: { admission } }).catch(
        () => undefined,
      )
    }
    using deadline = Deadline.after(1000, { clock })
    const error = await refusal(
      callModel({ models: [pa, pb], request, deadline, limits: { admission } }),
    )
    expect([error.provider, error.kind, error.retryAfterMs]).toEqual(['pa', 'rate_limited', 2000])
    const tooLarge = error.causes[1]?.cause as RateLimitedError
    expect([tooLarge.provider, tooLarge.kind, tooLarge.retryAfterMs]).toEqual([
      'pb',
      'request_too_large',
      Number.POSITIVE_INFINITY,
    ])
    expect(fake.requests).toHaveLength(1)
  })

  it('one model alone: its own refusal, as before, with itself as the one cause', async () => {
    const { clock, admission } = manualAdmission()
    const { pa } = await twoModels({ primary: 2 })
    {
      using deadline = Deadline.after(500, { clock })
      await callModel({ models: [pa], request, deadline, limits: { admission } }).catch(
        () => undefined,
      )
    }
    using deadline = Deadline.after(1000, { clock })
    const error = await refusal(
      callModel({ models: [pa], request, deadline, limits: { admission } }),
    )
    expect([error.provider, error.retryAfterMs]).toEqual(['pa', 2000])
    expect(error.causes).toHaveLength(1)
    expect(error.message).toMatch(/\(every key is cooling for 2000 ms or more; [^)]*\)$/)
  })
})
