import { Deadline } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { defaultAdmission, setDefaultAdmission } from '../../src/admission/defaultAdmission.js'
import { MemoryCooldownStore } from '../../src/admission/MemoryCooldownStore.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { defaultRetryBudgets, setDefaultRetryBudgets } from '../../src/retry/defaultRetryBudgets.js'
import { RetryBudget } from '../../src/retry/RetryBudget.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hello')], maxTokens: 16 }

/** A provider that answers 429 asking for 30 s: nothing cools down during a test. */
async function limitedFor30s() {
  const fake = await fakes.start({
    dialect: 'openai',
    reply: openAIErrors.rateLimited({ retryAfterS: 30 }),
  })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-4o-mini' }),
  )
  return { fake, model }
}

const ask = (options: Parameters<typeof callModel>[0]) =>
  callModel(options).catch((error: unknown) => error)

describe('safe by default', () => {
  it('calls that pass no admission share one: the second meets the first one’s 429 without sending', async () => {
    const { fake, model } = await limitedFor30s()
    using deadline = Deadline.after(2000)
    expect(isModelUnavailable(await ask({ models: [model], request, deadline }))).toBe(true)
    const second = await ask({ models: [model], request, deadline })
    expect(isRateLimited(second)).toBe(true)
    expect((second as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(25_000)
    expect(fake.requests).toHaveLength(1)
    expect(
      defaultAdmission().forecast({
        provider: 'openai',
        endpoint: model.baseURL,
        keys: ['sk-a'],
        model: model.model,
      }).waitMs,
    ).toBeGreaterThan(25_000)
  })

  it('`limits: { admission: false }` opts out: every call sends and learns the limit for itself', async () => {
    const { fake, model } = await limitedFor30s()
    using deadline = Deadline.after(2000)
    for (let i = 0; i < 2; i++) {
      expect(
        isModelUnavailable(
          await ask({ models: [model], request, deadline, limits: { admission: false } }),
        ),
      ).toBe(true)
    }
    expect(fake.requests).toHaveLength(2)
  })

  it('a passed Admission replaces the default, which learns nothing', async () => {
    const { fake, model } = await limitedFor30s()
    const own = new Admission()
    using deadline = Deadline.after(2000)
    await ask({ models: [model], request, deadline, limits: { admission: own } })
    expect(
      isRateLimited(await ask({ models: [model], request, deadline, limits: { admission: own } })),
    ).toBe(true)
    const target = {
      provider: 'openai',
      endpoint: model.baseURL,
      keys: ['sk-a'],
      model: model.model,
    }
    expect(own.forecast(target).waitMs).toBeGreaterThan(25_000)
    expect(defaultAdmission().forecast(target).waitMs).toBe(0)
    expect(fake.requests).toHaveLength(1)
  })

  it('setDefaultAdmission replaces the process-wide default for calls that pass none', async () => {
    const { fake, model } = await limitedFor30s()
    const chosen = new Admission()
    setDefaultAdmission(chosen)
    expect(defaultAdmission()).toBe(chosen)
    using deadline = Deadline.after(2000)
    await ask({ models: [model], request, deadline })
    const target = {
      provider: 'openai',
      endpoint: model.baseURL,
      keys: ['sk-a'],
      model: model.model,
    }
    expect(chosen.forecast(target).waitMs).toBeGreaterThan(25_000)
    expect(fake.requests).toHaveLength(1)
  })

  // Taken, `null` failed every call of the process after it as "Cannot read
  // properties of null (reading 'acquire')", and a store or a single
  // RetryBudget in place of what the setter takes as "… is not a function":
  // nothing sent, and nothing naming the setter.
  it('setDefaultAdmission(null) drops the default as undefined does: calls still answer', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
    const model = fakes.adapterFor('openai', fake.baseURL, 'gpt-4o-mini')
    setDefaultAdmission(new Admission())
    setDefaultAdmission(null as never)
    setDefaultRetryBudgets(null as never)
    expect(defaultAdmission()).toBeInstanceOf(Admission)
    expect((await callModel({ models: [model], request })).text).toBe('ok')
  })

  it('setDefaultAdmission and setDefaultRetryBudgets refuse what they cannot use, naming it', () => {
    for (const wrong of [new MemoryCooldownStore(), {}, 'redis://localhost']) {
      expect(() => setDefaultAdmission(wrong as never)).toThrow(
        /^setDefaultAdmission: admission must be an Admission/,
      )
    }
    expect(() => setDefaultRetryBudgets(new RetryBudget() as never)).toThrow(
      /^setDefaultRetryBudgets: registry must be a RetryBudgetRegistry/,
    )
    // Refused, the defaults in force are kept.
    expect(typeof defaultAdmission().acquire).toBe('function')
    expect(typeof defaultRetryBudgets().forProvider).toBe('function')
  })

  it('two providers of one name at different base URLs do not share a cooldown', async () => {
    const { fake: limited, model: first } = await limitedFor30s()
    const healthyFake = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
    // Same name (`openai`, the dialect's), same key: only the URL differs.
    const second = fakes.adapter(
      openAICompatible({ baseURL: healthyFake.baseURL, apiKey: 'sk-a', model: 'gpt-4o-mini' }),
    )
    using deadline = Deadline.after(2000)
    await ask({ models: [first], request, deadline })
    const answer = await callModel({ models: [second], request, deadline })
    expect(answer.text).toBe('ok')
    expect(limited.requests).toHaveLength(1)
    expect(healthyFake.requests).toHaveLength(1)
  })

  it('one retry budget per provider is shared by every call: once drained, calls stop retrying', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: openAIErrors.serverError() })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'flaky' }),
    )
    const common = { models: [model], request, retry: { maxAttempts: 2, delay: FAST_RETRIES } }
    // Each call: a failure, a retry, a failure — 2 tokens of 10; a retry needs more than 5 left.
    for (let i = 0; i < 2; i++) await ask(common)
    expect(fake.requests).toHaveLength(4)
    expect(defaultRetryBudgets().forProvider(model).tokens).toBe(6)
    const drained = await ask(common)
    expect(String((drained as Error).message)).toMatch(/retry budget drained/)
    expect(fake.requests).toHaveLength(5)
    // `retry: { budgets: false }` opts out.
    await ask({ ...common, retry: { ...common.retry, budgets: false } })
    expect(fake.requests).toHaveLength(7)
  })
})
