import { Deadline } from '@hourglass/core'
import { openAIErrors } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import type { CallLimits } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatRequest } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

// The earliest-answer rule compared a rate-limited model's short wait with a
// fallback that would refuse the request anyway, with nothing sent: one the
// cost budget cannot afford (skipped for the budget), or one that cannot
// build it (`extra.seed`: Anthropic has no equivalent, and the call ends
// there with InvalidChatRequestError). With no latency history, that
// fallback was "expected to answer at once", so the call left the primary at
// its first 429 (`retry-after-ms: 50`) and failed in milliseconds, its
// deadline of 10 s unused — the primary would have answered after its wait.
// Such a model is left out of the comparison, before an attempt
// (admission's wait) and after one.

const fakes = useFakes()
const prices = {
  first: { inputPerMTok: 1, outputPerMTok: 1 },
  dear: { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000 },
}

interface Scenario {
  request: ChatRequest
  /** The primary and a fallback that would refuse the request. */
  setup(): Promise<{
    primary: Awaited<ReturnType<typeof fakes.start>>
    refusing: Awaited<ReturnType<typeof fakes.start>>
    models: ModelAdapter[]
    limits: Omit<CallLimits, 'admission'>
  }>
}

const scenarios: [string, Scenario][] = [
  [
    'the cost budget cannot afford',
    {
      request: { messages: [user('hi')], maxTokens: 100 },
      async setup() {
        const primary = await fakes.start()
        const refusing = await fakes.start()
        const models = [
          fakes.adapter(
            openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'first' }),
          ),
          fakes.adapter(
            openAICompatible({
              baseURL: refusing.baseURL,
              apiKey: 'sk',
              model: 'dear',
              name: 'other',
            }),
          ),
        ]
        // $1: the first model's estimate fits many times, the dear one's ($105) never.
        return {
          primary,
          refusing,
          models,
          limits: { budget: new CostBudget({ limitUsd: 1, prices }) },
        }
      },
    },
  ],
  [
    'cannot build the request',
    {
      request: { messages: [user('hi')], maxTokens: 100, extra: { seed: 7 } },
      async setup() {
        const primary = await fakes.start()
        const refusing = await fakes.start({ dialect: 'anthropic' })
        const models = [
          fakes.adapter(
            openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'first' }),
          ),
          fakes.adapter(anthropic({ baseURL: refusing.baseURL, apiKey: 'sk', model: 'claude' })),
        ]
        return { primary, refusing, models, limits: {} }
      },
    },
  ],
]

describe.each(scenarios)('a fallback that %s is not expected to answer sooner', (_, scenario) => {
  const { request } = scenario

  it.each([
    ['with admission', () => new Admission()],
    ['without admission', () => false as const],
  ])('a short rate limit on the primary is waited out (%s)', async (_, admission) => {
    const { primary, refusing, models, limits } = await scenario.setup()
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 50 }))
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models,
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { ...limits, admission: admission() },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.model).toBe('first')
    expect(records.map((r) => [r.model, r.decision])).toEqual([
      ['first', 'retry'],
      ['first', 'success'],
    ])
    expect(records[0]?.reason).not.toMatch(/falling back/)
    expect(primary.requests).toHaveLength(2)
    expect(refusing.requests).toHaveLength(0)
  })

  it('admission waits for a cooling primary instead of refusing it for that fallback', async () => {
    const { primary, refusing, models, limits } = await scenario.setup()
    const admission = new Admission()
    // Another call met the limit: the primary's key is cooling when this call
    // starts (for 500 ms: still cooling when read, on a loaded machine too).
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 500 }))
    await callModel({
      models: models.slice(0, 1),
      request,
      retry: { budgets: false, maxAttempts: 1 },
      limits: { admission },
    }).catch(() => {})
    expect(
      admission.forecast({
        provider: 'openai',
        endpoint: primary.baseURL,
        keys: ['sk'],
        model: 'first',
      }).waitMs,
    ).toBeGreaterThan(0)
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models,
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { ...limits, admission },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.model).toBe('first')
    expect(records.map((r) => [r.model, r.decision])).toEqual([['first', 'success']])
    expect(refusing.requests).toHaveLength(0)
  })
})

describe('a fallback that would take the request', () => {
  it('an affordable one is still preferred to the wait', async () => {
    const [, scenario] = scenarios[0]!
    const { primary, refusing, models } = await scenario.setup()
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 5000 }))
    const answer = await callModel({
      models,
      request: scenario.request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { budget: new CostBudget({ limitUsd: 1000, prices }), admission: false },
    })
    expect(answer.model).toBe('dear')
    expect(primary.requests).toHaveLength(1)
    expect(refusing.requests).toHaveLength(1)
  })

  it('one that can build it is still preferred to the wait', async () => {
    const [, scenario] = scenarios[1]!
    const { primary, models } = await scenario.setup()
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 5000 }))
    const other = await fakes.start()
    const answer = await callModel({
      models: [
        ...models.slice(0, 1),
        fakes.adapter(
          openAICompatible({ baseURL: other.baseURL, apiKey: 'sk', model: 'ok', name: 'other' }),
        ),
      ],
      request: scenario.request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { admission: false },
    })
    expect(answer.model).toBe('ok')
    expect(primary.requests).toHaveLength(1)
  })
})

describe('a model after one that cannot build the request', () => {
  it('is out of reach too: the call would end at the one before it', async () => {
    const [, scenario] = scenarios[1]!
    const { primary, refusing, models } = await scenario.setup()
    const last = await fakes.start()
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 50 }))
    const answer = await callModel({
      models: [
        ...models,
        fakes.adapter(
          openAICompatible({ baseURL: last.baseURL, apiKey: 'sk', model: 'last', name: 'other' }),
        ),
      ],
      request: scenario.request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { admission: false },
    })
    expect(answer.model).toBe('first')
    expect(refusing.requests).toHaveLength(0)
    expect(last.requests).toHaveLength(0)
  })
})
