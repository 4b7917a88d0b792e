import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { type CallModelOptions, callModel } from '../../src/index.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

async function outcomeOf(options: Partial<CallModelOptions>) {
  const fake = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o' }),
  )
  const outcome = await callModel({
    models: [model],
    request: { messages: [user('hi')], maxTokens: 8 },
    ...options,
  } as CallModelOptions).then(
    (r) => r.text,
    (e: unknown) => e,
  )
  return { outcome, sent: fake.requests.length }
}

describe('shared objects and retry options of the wrong shape are refused before anything is sent', () => {
  it.each([
    [
      'limits.admission true',
      { limits: { admission: true } },
      'callModel: limits.admission must be an Admission (new Admission()) or false, got true',
    ],
    [
      'limits.admission {}',
      { limits: { admission: {} } },
      'callModel: limits.admission must be an Admission (new Admission()) or false, got an object',
    ],
    [
      'limits.budget {}',
      { limits: { budget: {} } },
      'callModel: limits.budget must be a CostBudget (new CostBudget({ limitUsd, prices })), got an object',
    ],
    [
      'retry.budgets {}',
      { retry: { budgets: {} } },
      'callModel: retry.budgets must be a RetryBudgetRegistry (new RetryBudgetRegistry()) or false, got an object',
    ],
    [
      'retry.delay null',
      { retry: { delay: null } },
      'callModel: retry.delay must be an object of options, got null',
    ],
    [
      'retry.priority urgent',
      { retry: { priority: 'urgent' } },
      "callModel: retry.priority must be 'foreground' or 'background', got 'urgent'",
    ],
  ])('%s: a TypeError naming the option and what it takes', async (_, options, message) => {
    const { outcome, sent } = await outcomeOf(options as Partial<CallModelOptions>)
    expect(outcome).toBeInstanceOf(TypeError)
    expect((outcome as Error).message.startsWith(message)).toBe(true)
    expect(sent).toBe(0)
  })

  it('the real objects, false and the documented values are accepted', async () => {
    const accepted: Array<Partial<CallModelOptions>> = [
      {
        limits: {
          admission: new Admission(),
          budget: new CostBudget({
            limitUsd: 1,
            prices: { 'gpt-4o': { inputPerMTok: 1, outputPerMTok: 1 } },
          }),
        },
      },
      { limits: { admission: false }, retry: { budgets: false, priority: 'background' } },
      { retry: { budgets: new RetryBudgetRegistry(), priority: 'foreground', delay: {} } },
    ]
    for (const options of accepted) expect((await outcomeOf(options)).outcome).toBe('ok')
  })
})

describe('null is none, as every option reads it', () => {
  it('limits.admission, limits.budget, retry.budgets, retry.priority and signal null: the defaults, the call answered', async () => {
    // The checks above refused null at first (a regression: each was read
    // as the default); limits.budget null and signal null also failed deep
    // inside ("Cannot read properties of null").
    expect(
      await outcomeOf({
        limits: { admission: null, budget: null },
        retry: { budgets: null, priority: null },
        signal: null,
      } as unknown as Partial<CallModelOptions>),
    ).toEqual({ outcome: 'ok', sent: 1 })
  })
})
