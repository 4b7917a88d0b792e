import { Deadline, ManualClock } from '@hourglass/core'
import {
  anthropicErrors,
  openAIErrors,
  type RecordedRequest,
  reply,
  startFakeProvider,
} from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { MemoryCooldownStore } from '../../src/admission/MemoryCooldownStore.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isKeysRetired } from '../../src/errors/KeysRetiredError.js'
import {
  isModelUnavailable,
  type ModelUnavailableError,
} from '../../src/errors/ModelUnavailableError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }

/** Admission and deadlines on one manual clock: nothing here waits for real time. */
function manual() {
  const clock = new ManualClock(1_000)
  const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
  return { clock, admission }
}

describe('cooldown scopes: a 429 cools one model, an overload the provider, a quota the key', () => {
  it('openai: a 429 on gpt-4o does not hold back gpt-4o-mini on the same key; gpt-4o itself stays cooling', async () => {
    const { clock, admission } = manual()
    const perModel = (r: RecordedRequest) =>
      r.model === 'gpt-4o'
        ? openAIErrors.rateLimited({ retryAfterS: 20 })
        : reply.text(`answered by ${r.model}`)
    const fake = await fakes.start({ dialect: 'openai', reply: perModel })
    const big = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    const small = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o-mini' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [big, small],
      request,
      deadline,
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('answered by gpt-4o-mini')
    expect(clock.now()).toBe(1_000) // nothing was waited for
    expect(records.map((r) => [r.model, r.errorKind, r.decision])).toEqual([
      ['gpt-4o', 'rate_limited', 'fallback'],
      ['gpt-4o-mini', undefined, 'success'],
    ])
    expect(fake.requests.map((r) => [r.model, r.apiKey])).toEqual([
      ['gpt-4o', 'sk-1'],
      ['gpt-4o-mini', 'sk-1'],
    ])

    // gpt-4o's own cooldown still holds: refused at once, nothing sent.
    const refused = await callModel({ models: [big], request, deadline, limits: { admission } })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(isRateLimited(refused)).toBe(true)
    expect(fake.requests).toHaveLength(2)
    // gpt-4o-mini on the same key is still free.
    const again = await callModel({ models: [small], request, deadline, limits: { admission } })
    expect(again.text).toBe('answered by gpt-4o-mini')
    expect(fake.requests).toHaveLength(3)
  })

  it('a 429 on one key goes on with the model on its free key, not to a fallback merely without latency history', async () => {
    // A fallback with no answer yet counts as answering at once, so the
    // earliest-answer rule, weighed with no wait in view, sent every call
    // whose primary met a 429 on one key to the fallback model: the primary
    // was ready on its other key, its keys configured to absorb just that.
    const { clock, admission } = manual()
    const primary = await fakes.start({ dialect: 'openai', reply: reply.text('from gpt-4o') })
    primary.enqueue(openAIErrors.rateLimited({ retryAfterS: 20 }))
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('from the backup') })
    const big = fakes.adapter(
      openAICompatible({ baseURL: primary.baseURL, apiKeys: ['sk-1', 'sk-2'], model: 'gpt-4o' }),
    )
    const small = fakes.adapter(
      openAICompatible({
        baseURL: backup.baseURL,
        apiKey: 'sk-b',
        model: 'gpt-4o-mini',
        name: 'b',
      }),
    )
    // gpt-4o has answered before, in 800 ms; the backup never has.
    await admission.report(
      'openai',
      'sk-1',
      { ok: true, latencyMs: 800 },
      {
        endpoint: primary.baseURL,
        model: 'gpt-4o',
      },
    )
    using deadline = Deadline.after(15_000, { clock })
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [big, small],
      request,
      deadline,
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('from gpt-4o')
    expect(primary.requests.map((r) => r.apiKey)).toEqual(['sk-1', 'sk-2'])
    expect(backup.requests).toHaveLength(0)
    expect(records.map((r) => [r.model, r.errorKind, r.decision, r.delayMs])).toEqual([
      ['gpt-4o', 'rate_limited', 'retry', 0],
      ['gpt-4o', undefined, 'success', undefined],
    ])
    expect(clock.now()).toBe(1_000) // nothing was waited for
  })

  it('a 429 asking for no wait on the only key goes to a fallback expected sooner: the key just refused is not "another key free"', async () => {
    // A zero-length cooldown (`Retry-After: 0`) leaves the refused key
    // granted as a probe, so admission's wait for the model was 0 with one
    // key: read as "another key free", the earliest-answer rule was skipped
    // and the refused key was sent to again until attempts ran out.
    const { clock, admission } = manual()
    const primary = await fakes.start({
      dialect: 'openai',
      reply: () => openAIErrors.rateLimited({ retryAfterS: 0 }),
    })
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('from the backup') })
    const big = fakes.adapter(
      openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    const small = fakes.adapter(
      openAICompatible({
        baseURL: backup.baseURL,
        apiKey: 'sk-b',
        model: 'gpt-4o-mini',
        name: 'b',
      }),
    )
    // gpt-4o has answered before, in 800 ms; the backup never has.
    await admission.report(
      'openai',
      'sk-1',
      { ok: true, latencyMs: 800 },
      { endpoint: primary.baseURL, model: 'gpt-4o' },
    )
    using deadline = Deadline.after(15_000, { clock })
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [big, small],
      request,
      deadline,
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('from the backup')
    expect(primary.requests).toHaveLength(1)
    expect(records.map((r) => [r.model, r.errorKind, r.decision, r.why])).toEqual([
      ['gpt-4o', 'rate_limited', 'fallback', 'fallback-sooner'],
      ['gpt-4o-mini', undefined, 'success', undefined],
    ])
  })

  it('a 429 asking for no wait on one key goes on with the other key free, not the refused key again', async () => {
    // `Retry-After: 0` cools sk-1 for 0 ms: the retry is made because
    // sk-2 is free, but admission hands out its first free lane, and sk-1
    // — half-open, its probe due — came first: sk-1 was sent 3 times and
    // the call failed, sk-2 never tried.
    const { clock, admission } = manual()
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r: RecordedRequest) =>
        r.apiKey === 'sk-1'
          ? openAIErrors.rateLimited({ retryAfterS: 0 })
          : reply.text(`answered by ${r.apiKey}`),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKeys: ['sk-1', 'sk-2'], model: 'gpt-4o' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const answer = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(answer.text).toBe('answered by sk-2')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-1', 'sk-2'])
  })

  it('two keys refused with no wait in one call, a third free: the third is tried, not the first again', async () => {
    // Only the key just refused was left out of the next attempt: after
    // sk-b's 429 the choice was sk-a again (its 0 ms cooldown over, first
    // in order), refused a second time, and the attempts ran out with
    // sk-c free and never tried.
    const { clock, admission } = manual()
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r: RecordedRequest) =>
        r.apiKey === 'sk-c'
          ? reply.text('answered by sk-c')
          : openAIErrors.rateLimited({ retryAfterS: 0 }),
    })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-a', 'sk-b', 'sk-c'],
        model: 'gpt-4o',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const answer = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(answer.text).toBe('answered by sk-c')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-a', 'sk-b', 'sk-c'])
  })

  it('a key refused with no wait is still used when the other key turns out to be cooling (another instance cooled it meanwhile)', async () => {
    // sk-1's 429 asked for no wait and sk-2 looked free, so the retry was
    // made for sk-2 with sk-1 left out of its choice; admission then read
    // the shared store and found sk-2 cooling for 30 s: the call failed with
    // a 30 s RateLimitedError, sk-1 free.
    const clock = new ManualClock(1_000)
    const store = new MemoryCooldownStore({ clock })
    const options = { clock, store, defaultNeededMs: 0, logger: { warn: () => {} } }
    const other = new Admission(options)
    const admission = new Admission(options)
    let first = true
    let baseURL = ''
    const fake = await fakes.start({
      dialect: 'openai',
      reply: async (r: RecordedRequest) => {
        if (!first) return reply.text(`answered by ${r.apiKey}`)
        first = false
        await other.report(
          'openai',
          'sk-2',
          { ok: false, error: { kind: 'rate_limited', status: 429, retryAfterMs: 30_000 } },
          { endpoint: baseURL, model: 'gpt-4o' },
        )
        return openAIErrors.rateLimited({ retryAfterS: 0 })
      },
    })
    baseURL = fake.baseURL
    const model = fakes.adapter(
      openAICompatible({ baseURL, apiKeys: ['sk-1', 'sk-2'], model: 'gpt-4o' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const answer = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(answer.text).toBe('answered by sk-1')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-1', 'sk-1'])
  })

  it('anthropic: an overload (529) cools the whole provider — neither another key nor another model of it is sent to before it ends', async () => {
    const { clock, admission } = manual()
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(anthropicErrors.overloaded())
    const opus = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKeys: ['sk-1', 'sk-2'], model: 'claude-opus-4-6' }),
    )
    const haiku = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKeys: ['sk-1', 'sk-2'], model: 'claude-haiku-4-5' }),
    )
    // 3 s left: the overload's 5–10 s cooldown does not fit.
    using deadline = Deadline.after(3_000, { clock })
    const error = await callModel({
      models: [opus, haiku],
      request,
      deadline,
      limits: { admission },
    })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(error).toBeDefined()
    expect(fake.requests.map((r) => [r.model, r.apiKey])).toEqual([['claude-opus-4-6', 'sk-1']])
    expect(clock.now()).toBe(1_000)

    // Once the cooldown is over, the provider is used again.
    clock.advance(10_001)
    using later = Deadline.after(3_000, { clock })
    const answer = await callModel({
      models: [haiku],
      request,
      deadline: later,
      limits: { admission },
    })
    expect(answer.text).toBe('Hello from the fake provider.')
  })

  it('openai: insufficient_quota (billing) is key-wide: another model on the same key is not sent to, another key is', async () => {
    const { clock, admission } = manual()
    const byKey = (r: RecordedRequest) =>
      r.apiKey === 'sk-broke' ? openAIErrors.insufficientQuota() : reply.text(`paid by ${r.apiKey}`)
    const fake = await fakes.start({ dialect: 'openai', reply: byKey })
    const big = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-broke', model: 'gpt-4o' }),
    )
    const small = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-broke', model: 'gpt-4o-mini' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const error = await callModel({
      models: [big, small],
      request,
      deadline,
      limits: { admission },
    })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(error).toBeDefined()
    expect(fake.requests.map((r) => r.model)).toEqual(['gpt-4o'])
    const refused = await callModel({ models: [small], request, deadline, limits: { admission } })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(isModelUnavailable(refused)).toBe(true)
    expect(isKeysRetired((refused as ModelUnavailableError).lastCause)).toBe(true)
    expect(fake.requests).toHaveLength(1)
    const other = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-paid', model: 'gpt-4o-mini' }),
    )
    const answer = await callModel({ models: [other], request, deadline, limits: { admission } })
    expect(answer.text).toBe('paid by sk-paid')
  })

  it('gemini: a quota that names no model (a per-project limit) is key-wide; one that names the model cools that model only', async () => {
    const { clock, admission } = manual()
    const exhausted = (quotaId: string, dimensions: Record<string, string>) =>
      reply.error(429, {
        error: {
          code: 429,
          message: 'You exceeded your current quota. Please retry in 20s.',
          status: 'RESOURCE_EXHAUSTED',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
              violations: [
                {
                  quotaMetric: 'generativelanguage.googleapis.com/generate_requests',
                  quotaId,
                  quotaDimensions: dimensions,
                  quotaValue: '100',
                },
              ],
            },
            { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '20s' },
          ],
        },
      })
    const fake = await fakes.start({ dialect: 'gemini' })
    const pro = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'g-1', model: 'gemini-2.5-pro' }),
    )
    const flash = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'g-1', model: 'gemini-2.5-flash' }),
    )
    using deadline = Deadline.after(15_000, { clock })

    fake.enqueue(
      exhausted('GenerateRequestsPerMinutePerProjectPerModel', {
        location: 'global',
        model: 'gemini-2.5-pro',
      }),
    )
    const perModel = await callModel({
      models: [pro, flash],
      request,
      deadline,
      limits: { admission },
    })
    expect(perModel.text).toBe('Hello from the fake provider.')
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1beta/models/gemini-2.5-pro:generateContent',
      '/v1beta/models/gemini-2.5-flash:generateContent',
    ])

    fake.enqueue(exhausted('GenerateRequestsPerMinutePerProject', { location: 'global' }))
    const ultra = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'g-1', model: 'gemini-2.5-flash-lite' }),
    )
    const keyWide = await callModel({
      models: [ultra, flash],
      request,
      deadline,
      limits: { admission },
    })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(keyWide).toBeDefined()
    expect(fake.requests).toHaveLength(3) // flash, on the same project key, was not sent to
  })

  it('a cooldown reported without a model (an older process, a caller of Admission.report) still holds every model of the key', async () => {
    const { clock, admission } = manual()
    const fake = await startFakeProvider({ dialect: 'openai' })
    try {
      const small = openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'sk-1',
        model: 'gpt-4o-mini',
      })
      await admission.report(
        'openai',
        'sk-1',
        { ok: false, error: { kind: 'rate_limited', status: 429, retryAfterMs: 20_000 } },
        { endpoint: small.baseURL },
      )
      using deadline = Deadline.after(15_000, { clock })
      const refused = await callModel({ models: [small], request, deadline, limits: { admission } })
        .then(() => undefined)
        .catch((e: unknown) => e)
      expect(isRateLimited(refused)).toBe(true)
      expect(fake.requests).toHaveLength(0)
      await small.close()
    } finally {
      await fake.close()
    }
  })
})
