import { Deadline, ManualClock } from '@hourglass/core'
import { anthropicErrors, openAIErrors, type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isKeysRetired, type KeysRetiredError } from '../../src/errors/KeysRetiredError.js'
import type { ModelUnavailableError } from '../../src/errors/ModelUnavailableError.js'
import { isRateLimited, type RateLimitedError } from '../../src/errors/RateLimitedError.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'
import { drive, driveOne, pause, WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }

/** Key `sk-broke` is out of quota (OpenAI's 429 `insufficient_quota`); every other key answers. */
const byKey = (r: RecordedRequest) =>
  r.apiKey === 'sk-broke' ? openAIErrors.insufficientQuota() : reply.text(`paid by ${r.apiKey}`)

/**
 * A quota or billing error is the key's (the account behind it), not the
 * request's nor the provider's: like a rejected key, the same call goes on at
 * once with the provider's next key. Before, the call failed (or fell back)
 * though another key of the same provider would have answered.
 */
describe('a key out of quota: the call goes on with the next key of the provider', () => {
  it('with admission: answered on the next key at once; the spent key stays retired for the calls after it', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const fake = await fakes.start({ dialect: 'openai', reply: byKey })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-broke', 'sk-paid'],
        model: 'gpt-4o-mini',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [model],
      request,
      deadline,
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('paid by sk-paid')
    expect(clock.now()).toBe(1_000) // nothing was waited for
    expect(records.map((r) => [r.errorKind, r.decision, r.delayMs, r.reason])).toEqual([
      [
        'quota_exhausted',
        'retry',
        0,
        'this key is out of quota; the next key of the provider is tried',
      ],
      [undefined, 'success', undefined, undefined],
    ])
    expect(records[1]?.choice).toBe('another key of this provider (the last one is out of quota)')

    // The spent key is retired: the next calls go straight to the paid one.
    const again = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(again.text).toBe('paid by sk-paid')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-broke', 'sk-paid', 'sk-paid'])
  })

  it('a quota with a server wait cools the key instead of retiring it: the call goes on with the next key, the spent one is sent to again after the wait', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.error(
        429,
        { error: { message: 'quota', type: 'insufficient_quota', code: 'insufficient_quota' } },
        { 'retry-after': '30' },
      ),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKeys: ['sk-1', 'sk-2'], model: 'gpt-4o-mini' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const answer = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(answer.text).toBe('Hello from the fake provider.')
    expect(clock.now()).toBe(1_000)
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-1', 'sk-2'])
    // Past its 30 s, sk-1 is free again (cooled, not retired).
    clock.advance(30_001)
    using later = Deadline.after(15_000, { clock })
    const keysAfter = new Set<string | undefined>()
    for (let i = 0; i < 3; i++) {
      await callModel({ models: [model], request, deadline: later, limits: { admission } })
      keysAfter.add(fake.requests.at(-1)?.apiKey)
    }
    expect(keysAfter.has('sk-1')).toBe(true)
  })

  it('without admission: each key once in a call; a quota error on every key still fails the call', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: byKey })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-broke', 'sk-paid'],
        model: 'gpt-4o-mini',
      }),
    )
    const answer = await callModel({ models: [model], request, limits: { admission: false } })
    expect(answer.text).toBe('paid by sk-paid')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-broke', 'sk-paid'])

    const broke = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-broke', 'sk-broke'],
        model: 'gpt-4o-mini',
      }),
    )
    const before = fake.requests.length
    const error = await callModel({
      models: [broke],
      request,
      retry: { maxAttempts: 5 },
      limits: { admission: false },
    })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect((error as ModelUnavailableError).lastCause).toMatchObject({ kind: 'quota_exhausted' })
    // The same spent key is not sent twice in one call.
    expect(fake.requests.slice(before).map((r) => r.apiKey)).toEqual(['sk-broke'])
  })

  it('with an admission that never retires keys (retireMs: 0): the next key is the one sent, not the key just rejected', async () => {
    // Admission keeps a key it does not retire among those it hands out: the
    // call's retries "to the next key" went out with the rejected one (three
    // 401s, or three quota errors), and the call failed with a key that works.
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, retireMs: 0, logger: { warn: () => {} } })
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r: RecordedRequest) =>
        r.apiKey === 'sk-revoked' ? openAIErrors.authentication() : byKey(r),
    })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-revoked', 'sk-broke', 'sk-paid'],
        model: 'gpt-4o-mini',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const answer = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(answer.text).toBe('paid by sk-paid')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-revoked', 'sk-broke', 'sk-paid'])
    // Never retired: the next call may ask the first key again (its choice, not this call's).
    expect(
      admission.forecast({ provider: 'openai', endpoint: fake.baseURL, keys: ['sk-revoked'] })
        .waitMs,
    ).toBe(0)
  })

  it("with retireMs: 0, a rejected key merely sharing the provider's overload cooldown is not sent again after it", async () => {
    // The overload cools every key of the provider, the rejected one too:
    // read as "held back by admission", it was kept among the keys, handed
    // out first once the cooldown ended, and refused again — the call failed
    // though its good key was free.
    const clock = new WaitClock()
    const admission = new Admission({
      clock,
      retireMs: 0,
      random: () => 0,
      logger: { warn: () => {} },
    })
    let goodSeen = 0
    const fake = await fakes.start({
      dialect: 'anthropic',
      reply: (r: RecordedRequest) =>
        r.apiKey === 'sk-revoked'
          ? anthropicErrors.authentication()
          : goodSeen++ === 0
            ? anthropicErrors.overloaded()
            : reply.text('answered by sk-good'),
    })
    const model = fakes.adapter(
      anthropic({
        baseURL: fake.baseURL,
        apiKeys: ['sk-revoked', 'sk-good'],
        model: 'claude-haiku-4-5',
      }),
    )
    using deadline = Deadline.after(60_000, { clock })
    const answer = await driveOne(
      clock,
      callModel({ models: [model], request, deadline, limits: { admission } }),
    )
    expect(answer.text).toBe('answered by sk-good')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-revoked', 'sk-good', 'sk-good'])
  })

  /**
   * `retireMs: 0` (never retire) on a WaitClock, keys [sk-revoked, sk-good]:
   * the revoked key always 401, the good one a 429 asking 30 s once, then answers.
   */
  async function revokedThenGood() {
    const clock = new WaitClock()
    const admission = new Admission({
      clock,
      retireMs: 0,
      random: () => 0,
      defaultNeededMs: 0,
      logger: { warn: () => {} },
    })
    let goodSeen = 0
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r: RecordedRequest) =>
        r.apiKey === 'sk-revoked'
          ? openAIErrors.authentication()
          : goodSeen++ === 0
            ? openAIErrors.rateLimited({ retryAfterS: 30 })
            : reply.text('answered by sk-good'),
    })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-revoked', 'sk-good'],
        model: 'gpt-4o-mini',
      }),
    )
    return { clock, admission, fake, model }
  }

  it('with retireMs: 0, a 429 on the good key is waited out for it, not answered by sending the rejected key again', async () => {
    // Never retired, the rejected key was the only key free after the good
    // key's 429 (Retry-After: 30): the retry went out at once with it,
    // refused again, and the call failed with the 401 — the good key free
    // 30 s later, well within the deadline.
    const { clock, admission, fake, model } = await revokedThenGood()
    using deadline = Deadline.after(60_000, { clock })
    const records: AttemptRecord[] = []
    const answer = await driveOne(
      clock,
      callModel({
        models: [model],
        request,
        deadline,
        limits: { admission },
        onAttempt: (r) => records.push(r),
      }),
    )
    expect(answer.text).toBe('answered by sk-good')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-revoked', 'sk-good', 'sk-good'])
    expect(records.map((r) => [r.errorKind, r.decision, r.delayMs])).toEqual([
      ['auth', 'retry', 0],
      ['rate_limited', 'retry', 30_000],
      [undefined, 'success', undefined],
    ])
  })

  it('with retireMs: 0, the good key cooled longer by another call during the wait: waited for again, the rejected key not sent', async () => {
    // The wait for the good key was read once, before sleeping it: another
    // call's 429 on that key meanwhile (50 s) left it cooling when the 30 s
    // ended, admission granted the rejected key, free, and the call failed
    // with its 401 — the good key free 20 s later, well within the deadline.
    const { clock, admission, fake, model } = await revokedThenGood()
    const startedAt = clock.now()
    using deadline = Deadline.after(120_000, { clock })
    // Another call of this process, 10 s into this one's 30 s wait, meets a
    // 429 on the good key asking 50 s.
    const other = pause(clock, 10_000).then(() =>
      admission.report(
        'openai',
        'sk-good',
        { ok: false, error: { kind: 'rate_limited', status: 429, retryAfterMs: 50_000 } },
        { endpoint: fake.baseURL, model: 'gpt-4o-mini' },
      ),
    )
    const call = callModel({ models: [model], request, deadline, limits: { admission } })
    await drive<unknown>(clock, [call, other])
    expect((await call).text).toBe('answered by sk-good')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-revoked', 'sk-good', 'sk-good'])
    // Answered once the other call's 50 s (from 10 s in) were over.
    expect(clock.now() - startedAt).toBe(60_000)
  })

  it('a key out of quota until a time, its only other key retired: a rate limit naming that wait, not "every key rejected"', async () => {
    // The rejected key's own cooldown (30 s) is shorter than the retired
    // other key's (for ever): read as "not held back longer than the
    // others", it was dropped, the retired key alone was left, and the call
    // failed with KeysRetiredError — the gateway's 502 "every key rejected"
    // for a quota that comes back in 30 s.
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    let quotaGone = false
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r: RecordedRequest) =>
        r.apiKey === 'sk-dead'
          ? openAIErrors.authentication()
          : quotaGone
            ? { ...openAIErrors.insufficientQuota(), headers: { 'retry-after': '30' } }
            : reply.text(`paid by ${r.apiKey}`),
    })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-dead', 'sk-quota'],
        model: 'gpt-4o-mini',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const first = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(first.text).toBe('paid by sk-quota')
    quotaGone = true
    const refused = await callModel({
      models: [model],
      request,
      deadline,
      limits: { admission },
    }).catch((e: unknown) => e)
    // Before: ModelUnavailableError, its last cause KEYS_RETIRED.
    expect(isRateLimited(refused)).toBe(true)
    expect((refused as RateLimitedError).retryAfterMs).toBe(30_000)
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-dead', 'sk-quota', 'sk-quota'])
  })

  it('a key out of quota until a time, its other key retired, while an overload cools the provider longer: the overload is named, not "every key retired"', async () => {
    // The provider's 60 s overload cooldown is longer than the quota's
    // 30 s: read as "held back no longer than the provider", the key out of
    // quota was dropped, the retired key alone was left, and the call
    // failed with KeysRetiredError (the gateway's 502 "every key rejected").
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    let quotaGone = false
    let baseURL = ''
    const fake = await fakes.start({
      dialect: 'openai',
      reply: async (r: RecordedRequest) => {
        if (r.apiKey === 'sk-dead') return openAIErrors.authentication()
        if (!quotaGone) return reply.text(`paid by ${r.apiKey}`)
        // Another call of this process met a 503 asking for 60 s meanwhile.
        await admission.report(
          'openai',
          'sk-other',
          { ok: false, error: { kind: 'overloaded', status: 503, retryAfterMs: 60_000 } },
          { endpoint: baseURL, model: 'gpt-4o-mini' },
        )
        return { ...openAIErrors.insufficientQuota(), headers: { 'retry-after': '30' } }
      },
    })
    baseURL = fake.baseURL
    const model = fakes.adapter(
      openAICompatible({ baseURL, apiKeys: ['sk-dead', 'sk-quota'], model: 'gpt-4o-mini' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    await callModel({ models: [model], request, deadline, limits: { admission } })
    quotaGone = true
    const refused = await callModel({
      models: [model],
      request,
      deadline,
      limits: { admission },
    }).catch((e: unknown) => e)
    expect(isKeysRetired(refused)).toBe(false)
    expect(isRateLimited(refused)).toBe(true)
    expect((refused as RateLimitedError).kind).toBe('overloaded')
    expect((refused as RateLimitedError).retryAfterMs).toBe(60_000)
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-dead', 'sk-quota', 'sk-quota'])
  })

  it('a rejected key admission retires stays among those it decides on: its refusal names every key of the provider', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, logger: { warn: () => {} } })
    const fake = await fakes.start({
      dialect: 'openai',
      reply: () => openAIErrors.authentication(),
    })
    const model = (apiKeys: string[]) =>
      fakes.adapter(openAICompatible({ baseURL: fake.baseURL, apiKeys, model: 'gpt-4o-mini' }))
    using deadline = Deadline.after(15_000, { clock })
    // An earlier call retired the second key.
    await callModel({ models: [model(['sk-b'])], request, deadline, limits: { admission } }).catch(
      () => {},
    )
    const error = await callModel({
      models: [model(['sk-a', 'sk-b'])],
      request,
      deadline,
      limits: { admission },
    })
      .then(() => undefined)
      .catch((e: unknown) => e)
    const refusal = (error as ModelUnavailableError).lastCause
    expect(isKeysRetired(refusal)).toBe(true)
    expect((refusal as KeysRetiredError).keyIds).toHaveLength(2)
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-b', 'sk-a'])
  })

  it('is not a retry the retry budget gates: a drained budget does not stop the next key', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: byKey })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-broke', 'sk-paid'],
        model: 'gpt-4o-mini',
      }),
    )
    const budgets = new RetryBudgetRegistry()
    const budget = budgets.forProvider(model)
    for (let i = 0; i < budget.maxTokens; i++) budget.recordFailure()
    expect(budget.canRetry()).toBe(false)
    const answer = await callModel({
      models: [model],
      request,
      retry: { budgets },
      limits: { admission: false },
    })
    expect(answer.text).toBe('paid by sk-paid')
    // Nor is the quota error charged to it as a failure worth retrying.
    expect(budget.tokens).toBe(budget.tokenRatio)
  })

  it('with admission and every key out of quota: KEYS_RETIRED for the next call, nothing sent', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const fake = await fakes.start({ dialect: 'openai', reply: byKey })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-broke'],
        model: 'gpt-4o-mini',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const first = await callModel({ models: [model], request, deadline, limits: { admission } })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect((first as ModelUnavailableError).lastCause).toMatchObject({ kind: 'quota_exhausted' })
    const second = await callModel({ models: [model], request, deadline, limits: { admission } })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(isKeysRetired((second as ModelUnavailableError).lastCause)).toBe(true)
    expect(fake.requests).toHaveLength(1)
  })
})
