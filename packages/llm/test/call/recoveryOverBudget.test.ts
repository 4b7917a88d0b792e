import { Deadline } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import {
  isOutputTruncated,
  type OutputTruncatedError,
} from '../../src/errors/OutputTruncatedError.js'
import { useFakes, user } from './support/fakes.js'
import { recordingReducers, tpmLimited } from './support/tpmLimited.js'

const fakes = useFakes()

/** $10 per million output tokens: 100 tokens cost $0.001, the raised cap's 200 twice that. */
const prices = { 'gpt-4o': { inputPerMTok: 1, outputPerMTok: 10 } }

const cut = reply.text('The first half of', {
  finishReason: 'length',
  usage: { inputTokens: 10, outputTokens: 100 },
})

async function cutAnswerOn(budget: CostBudget, ...then: ReturnType<typeof reply.text>[]) {
  const fake = await fakes.start({ dialect: 'openai', reply: cut })
  fake.enqueue(cut, ...then)
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
  )
  let answered: string | undefined
  const refused = await callModel({
    models: [model],
    request: { messages: [user('write a long essay')], maxTokens: 100 },
    limits: { admission: false, budget },
  }).then(
    (response) => {
      answered = response.text
      return undefined
    },
    (error: unknown) => error,
  )
  return { fake, refused, answered }
}

describe('a max_tokens recovery step the cost budget cannot afford', () => {
  it('surfaces the cut answer already paid for (OutputTruncatedError, the refusal its cause), not the budget error alone', async () => {
    // Room for the first answer ($0.00101), not for the raised cap's
    // estimate (~$0.002) nor the continuation's at the accepted cap (~$0.001).
    const budget = new CostBudget({ limitUsd: 0.0015, prices })
    const { fake, refused } = await cutAnswerOn(budget)
    // Before: BudgetExceededError, and the answer the budget had paid for was gone.
    expect(isOutputTruncated(refused)).toBe(true)
    const truncated = refused as OutputTruncatedError
    expect(truncated.response.text).toBe('The first half of')
    expect(truncated.response.finishReason).toBe('length')
    expect(truncated.response.usage).toMatchObject({ inputTokens: 10, outputTokens: 100 })
    // The step the budget refused was not taken (nothing of it was sent).
    expect(truncated.recoveries).toEqual([])
    expect(isBudgetExceeded(truncated.cause)).toBe(true)
    expect(truncated.message).toMatch(/the next step was not run: cost budget exceeded/)
    expect(fake.requests).toHaveLength(1)
    expect(budget.spentUsd).toBeCloseTo(0.00101, 8)
    expect(budget.reservedUsd).toBe(0)
  })

  // The raised cap's estimate counts the doubled cap: a continuation at the
  // cap accepted may fit where it did not. It went unasked: the recovery
  // ended with the cut answer, where `maxTokensCeiling: 0` got it whole.
  it('a raised cap the budget cannot afford is dropped: the continuation at the accepted cap completes the answer', async () => {
    // Room for the first answer ($0.00101) and a continuation's (~$0.001),
    // not for the raised cap's estimate (~$0.002).
    const budget = new CostBudget({ limitUsd: 0.0025, prices })
    const { fake, refused, answered } = await cutAnswerOn(
      budget,
      reply.text(' the essay, ended.', { usage: { inputTokens: 30, outputTokens: 5 } }),
    )
    expect(refused).toBeUndefined()
    expect(answered).toBe('The first half of the essay, ended.')
    expect(fake.requests).toHaveLength(2)
    // The second request is the continuation, at the cap accepted.
    expect(fake.requests[1]?.body).toMatchObject({ max_completion_tokens: 100 })
    expect(JSON.stringify(fake.requests[1]?.body)).toContain('[Output token limit hit, continue]')
    expect(budget.reservedUsd).toBe(0)
  })

  it('a budget that affords the raised cap but not the continuation after it: both parts counted, the steps taken named', async () => {
    // Each answer reports 100 output tokens ($0.00101): $0.00202 spent after
    // the raised cap's, and the continuation's estimate (~$0.002) no longer fits.
    const budget = new CostBudget({ limitUsd: 0.0035, prices })
    const { fake, refused } = await cutAnswerOn(budget)
    expect(isOutputTruncated(refused)).toBe(true)
    const truncated = refused as OutputTruncatedError
    expect(truncated.recoveries).toEqual(['raise-cap'])
    // The raised cap's answer replaced the first; both were billed.
    expect(truncated.response.text).toBe('The first half of')
    expect(truncated.response.usage.outputTokens).toBe(200)
    expect(isBudgetExceeded(truncated.cause)).toBe(true)
    expect(fake.requests).toHaveLength(2)
  })

  // Refused for its size by every model, nothing sent: with a fallback the
  // refusals came wrapped in a ModelUnavailableError (the budget's and
  // admission's beside each other), which was not read as a size refusal:
  // the recovery ended with the cut answer where model A alone got it whole.
  it('a raised cap too dear for the first model and too large for the fallback’s TPM limit is dropped as for one model', async () => {
    const a = await fakes.start({ dialect: 'openai' })
    a.enqueue(
      reply.text('The first half of', {
        finishReason: 'length',
        usage: { inputTokens: 10, outputTokens: 600 },
      }),
      reply.text(' the essay, ended.', { usage: { inputTokens: 30, outputTokens: 5 } }),
    )
    const b = await fakes.start({ dialect: 'openai', reply: reply.text('never') })
    // B (provider `openai`): a 1000-token TPM limit, under the raised cap's 1200.
    const { clock, admission } = tpmLimited()
    // Room for A's first answer ($0.00601) and a continuation's (~$0.006),
    // not for A's raised cap (~$0.012).
    const budget = new CostBudget({
      limitUsd: 0.015,
      prices: { ...prices, cheap: { inputPerMTok: 0.01, outputPerMTok: 0.1 } },
    })
    const shrinks: string[] = []
    using deadline = Deadline.after(3000, { clock })
    const response = await callModel({
      models: [
        fakes.adapter(
          openAICompatible({ name: 'a', baseURL: a.baseURL, apiKey: 'sk-a', model: 'gpt-4o' }),
        ),
        fakes.adapter(openAICompatible({ baseURL: b.baseURL, apiKey: 'sk-b', model: 'cheap' })),
      ],
      request: { messages: [user('write a long essay')], maxTokens: 600 },
      deadline,
      limits: { admission, budget },
      recovery: recordingReducers(shrinks),
    })
    expect(response.text).toBe('The first half of the essay, ended.')
    // The continuation went to A at the cap accepted; B was sent nothing.
    expect(a.requests).toHaveLength(2)
    expect(a.requests[1]?.body).toMatchObject({ max_completion_tokens: 600 })
    expect(b.requests).toHaveLength(0)
    // No history shrunk for a cap: the prompt fitted.
    expect(shrinks).toEqual([])
    expect(budget.reservedUsd).toBe(0)
  })
})

// Whether the step that ended the recovery was sent, counted: a fallback
// list's error is its last model's, and its class says nothing of the
// models before it. Read from the class, these two were told backwards.
describe('OutputTruncatedError says whether the step that ended the recovery was sent', () => {
  /** `cheap` as the first request's model; `dear` costs 1000× as much. */
  const listPrices = {
    cheap: { inputPerMTok: 1, outputPerMTok: 10 },
    dear: { inputPerMTok: 1000, outputPerMTok: 100000 },
  }

  it('sent to the first model (a 500), the fallback too dear: "the next step failed", though the cause is the BudgetExceededError', async () => {
    const a = await fakes.start({ dialect: 'openai' })
    a.enqueue(cut, openAIErrors.serverError())
    const b = await fakes.start({ dialect: 'openai', reply: reply.text('never') })
    const budget = new CostBudget({ limitUsd: 0.01, prices: listPrices })
    const error = await callModel({
      models: [
        fakes.adapter(openAICompatible({ baseURL: a.baseURL, apiKey: 'sk-a', model: 'cheap' })),
        fakes.adapter(openAICompatible({ baseURL: b.baseURL, apiKey: 'sk-b', model: 'dear' })),
      ],
      request: { messages: [user('write a long essay')], maxTokens: 100 },
      retry: { maxAttempts: 1 },
      limits: { admission: false, budget },
    }).catch((e: unknown) => e)
    expect(isOutputTruncated(error)).toBe(true)
    expect(isBudgetExceeded((error as OutputTruncatedError).cause)).toBe(true)
    // Sent: the raised cap went to `cheap`, which answered 500.
    expect(a.requests).toHaveLength(2)
    expect(b.requests).toHaveLength(0)
    expect((error as Error).message).toMatch(/; the next step failed: cost budget exceeded/)
  })

  it('the first model too dear, the fallback\'s key retired: "the next step was not run", though the cause is the ModelUnavailableError', async () => {
    const { error, a, b } = await dearAndRetired('AB')
    expect(isOutputTruncated(error)).toBe(true)
    expect(isModelUnavailable((error as OutputTruncatedError).cause)).toBe(true)
    // Nothing of the step was sent: A's one request is the first, B's the 401.
    expect(a.requests).toHaveLength(1)
    expect(b.requests).toHaveLength(1)
    expect((error as Error).message).toMatch(/; the next step was not run: /)
  })
})

describe('the same refusals of a raised cap, the list in either order', () => {
  // A too dear for the raised cap, B's only key retired: the list's error is
  // A's budget refusal for [B, A] and B's failure for [A, B]. Read by its
  // class alone, [B, A] dropped the cap and got the whole answer while
  // [A, B] ended the recovery with 17 characters.
  it('ends the recovery alike: not every model refused it for its size', async () => {
    const outcomes: string[] = []
    for (const order of ['AB', 'BA'] as const) {
      const { error } = await dearAndRetired(order)
      outcomes.push(isOutputTruncated(error) ? `truncated ${error.response.text}` : String(error))
    }
    expect(outcomes).toEqual(['truncated The first half of', 'truncated The first half of'])
  })
})

/**
 * A (gpt-4o) answers cut, with room in the budget for that answer
 * ($0.00101), not for the raised cap's (~$0.002); B, a hundredth of A's
 * price, fits but its only key was retired by a 401 first: admission sends
 * it nothing more. Called with the models in `order`; settles with what the
 * call threw (or its response).
 */
async function dearAndRetired(order: 'AB' | 'BA') {
  const admission = new Admission({ logger: { warn: () => {} } })
  const a = await fakes.start({ dialect: 'openai' })
  a.enqueue(cut, reply.text(' the essay, ended.', { usage: { inputTokens: 30, outputTokens: 5 } }))
  const b = await fakes.start({ dialect: 'openai', reply: openAIErrors.authentication() })
  const A = fakes.adapter(openAICompatible({ baseURL: a.baseURL, apiKey: 'sk-a', model: 'gpt-4o' }))
  const B = fakes.adapter(openAICompatible({ baseURL: b.baseURL, apiKey: 'sk-b', model: 'cheap' }))
  await callModel({
    models: [B],
    request: { messages: [user('x')], maxTokens: 10 },
    limits: { admission },
  }).catch(() => undefined)
  const budget = new CostBudget({
    limitUsd: 0.0025,
    prices: { ...prices, cheap: { inputPerMTok: 0.01, outputPerMTok: 0.1 } },
  })
  const error = await callModel({
    models: order === 'AB' ? [A, B] : [B, A],
    request: { messages: [user('write a long essay')], maxTokens: 100 },
    limits: { admission, budget },
  }).catch((e: unknown) => e)
  return { error, a, b }
}
