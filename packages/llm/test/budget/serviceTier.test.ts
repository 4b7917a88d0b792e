import {
  anthropic,
  CostBudget,
  callModel,
  estimatePromptTokens,
  isBudgetExceeded,
  isUnknownPrice,
  openAICompatible,
} from '@hourglass/llm'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

// OpenAI bills an answer at the tier that served it (`service_tier` in the
// answer); `auto` — and no `service_tier` at all, which OpenAI reads as
// `auto` — is the project's configured tier, which may be priority. A budget
// that priced every request at the standard price let a priority request
// (2× here) through a check its real price did not fit, and charged it half.
const answer = (tier: string) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    service_tier: tier,
    choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
  })
// $1 per token at the standard tier, $2 at priority, $0.5 at flex: charges read as tokens.
const prices = {
  m1: {
    inputPerMTok: 1e6,
    outputPerMTok: 1e6,
    serviceTiers: {
      priority: { inputPerMTok: 2e6, outputPerMTok: 2e6 },
      flex: { inputPerMTok: 0.5e6, outputPerMTok: 0.5e6 },
    },
  },
}
// One attempt's worst case is its prompt estimate plus 100 tokens (~110):
// ~$110 at the standard price, ~$220 at priority.
const request = (extra?: Record<string, unknown>) => ({
  messages: [{ role: 'user' as const, content: 'write' }],
  maxTokens: 100,
  ...(extra === undefined ? {} : { extra }),
})
const worstTokens = (extra?: Record<string, unknown>) => estimatePromptTokens(request(extra)) + 100

describe('service tiers in the cost budget', () => {
  let server: FaultServer
  let served = 'priority'
  beforeAll(async () => {
    server = await faultServer(() => ({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: answer(served),
    }))
  })
  afterAll(async () => {
    await server.close()
  })
  beforeEach(() => {
    served = 'priority'
  })
  const adapter = () =>
    openAICompatible({ baseURL: server.url, apiKey: 'sk-test-0000', model: 'm1' })
  const call = (budget: CostBudget, extra?: Record<string, unknown>) =>
    callModel({
      models: [adapter()],
      request: request(extra),
      limits: { budget, admission: false },
      retry: { budgets: false },
    })

  it.each([['priority'], ['auto']])(
    'service_tier %s: the check before sending holds the priority price, and refuses what only the standard price fits',
    async (tier) => {
      const before = server.records.length
      const budget = new CostBudget({ limitUsd: 150, prices })
      const error = await call(budget, { service_tier: tier }).catch((e: unknown) => e)
      expect(isBudgetExceeded(error)).toBe(true)
      expect((error as { estimateUsd: number }).estimateUsd).toBeCloseTo(
        2 * worstTokens({ service_tier: tier }),
        6,
      )
      expect(server.records.length).toBe(before) // nothing sent
    },
  )

  it('no service_tier is OpenAI’s auto: held at the worst tier priced', () => {
    const budget = new CostBudget({ limitUsd: 1000, prices })
    expect(budget.estimate('m1', request())).toBeCloseTo(2 * worstTokens(), 6)
    const standard = { service_tier: 'default' }
    expect(budget.estimate('m1', request(standard))).toBeCloseTo(worstTokens(standard), 6)
    const flex = { service_tier: 'flex' }
    expect(budget.estimate('m1', request(flex))).toBeCloseTo(0.5 * worstTokens(flex), 6)
  })

  it('an answer is charged at the tier that served it, not the one asked for', async () => {
    const budget = new CostBudget({ limitUsd: 1000, prices })
    await call(budget, { service_tier: 'auto' })
    expect(budget.spentUsd).toBeCloseTo(40, 6) // 20 tokens at priority
    served = 'default'
    await call(budget, { service_tier: 'auto' })
    expect(budget.spentUsd).toBeCloseTo(60, 6) // + 20 at the standard price
    expect(budget.reservedUsd).toBe(0)
  })

  it('a streamed answer too: charged at the tier its chunks name', async () => {
    const chunk = (fields: Record<string, unknown>) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', service_tier: 'priority', ...fields })}\n\n`
    const streamed = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' } }] }) +
        chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
        chunk({
          choices: [],
          usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
        }) +
        'data: [DONE]\n\n',
    })
    try {
      const budget = new CostBudget({ limitUsd: 1000, prices })
      const stream = callModel({
        models: [openAICompatible({ baseURL: streamed.url, apiKey: 'sk-test-0000', model: 'm1' })],
        request: { ...request({ service_tier: 'default' }), stream: true },
        limits: { budget, admission: false },
        retry: { budgets: false },
      })
      expect((await stream.result).serviceTier).toBe('priority')
      expect(budget.spentUsd).toBeCloseTo(40, 6)
    } finally {
      await streamed.close()
    }
  })

  it('a tier asked for without its price is refused before anything is sent (UnknownPriceError)', async () => {
    const before = server.records.length
    const budget = new CostBudget({
      limitUsd: 1000,
      prices: { m1: { inputPerMTok: 1e6, outputPerMTok: 1e6 } },
    })
    const error = await call(budget, { service_tier: 'priority' }).catch((e: unknown) => e)
    expect(isUnknownPrice(error)).toBe(true)
    expect((error as { serviceTier?: string }).serviceTier).toBe('priority')
    expect(server.records.length).toBe(before)
    // A tier billed at no more than the standard price is held at it.
    const flex = { service_tier: 'flex' }
    expect(budget.estimate('m1', request(flex))).toBeCloseTo(worstTokens(flex), 6)
  })
})

describe('serviceTiers prices', () => {
  it('are checked as the model prices are: a NaN or missing price is a TypeError naming the tier', () => {
    for (const tier of [
      { inputPerMTok: Number.NaN, outputPerMTok: 1 },
      { inputPerMTok: 1 },
      null,
    ]) {
      expect(
        () =>
          new CostBudget({
            limitUsd: 1,
            prices: {
              m1: { inputPerMTok: 1, outputPerMTok: 1, serviceTiers: { priority: tier as never } },
            },
          }),
      ).toThrow(/m1"\]\.serviceTiers\["priority"\] needs finite inputPerMTok and outputPerMTok/)
    }
  })

  it('a tier without a cache price reads its cached input at its own input price, not the standard tier’s cache price', () => {
    const budget = new CostBudget({
      limitUsd: 1e9,
      prices: {
        m1: {
          inputPerMTok: 1e6,
          outputPerMTok: 1e6,
          cachedInputPerMTok: 0.1e6,
          serviceTiers: { priority: { inputPerMTok: 2e6, outputPerMTok: 2e6 } },
        },
      },
    })
    const usage = { inputTokens: 10, outputTokens: 0, cachedInputTokens: 10 }
    expect(budget.record('m1', usage, undefined, 'default')).toBeCloseTo(1, 6)
    expect(budget.record('m1', usage, undefined, 'priority')).toBeCloseTo(20, 6)
  })

  it('a tier without a cache-write price writes at twice its own input price; an unknown tier at the dearest write', () => {
    const budget = new CostBudget({
      limitUsd: 1e9,
      prices: {
        m1: {
          inputPerMTok: 1e6,
          outputPerMTok: 1e6,
          cacheCreationInputPerMTok: 1.25e6,
          serviceTiers: { priority: { inputPerMTok: 2e6, outputPerMTok: 2e6 } },
        },
      },
    })
    const usage = { inputTokens: 10, outputTokens: 0, cacheCreationInputTokens: 10 }
    expect(budget.record('m1', usage, undefined, 'standard')).toBeCloseTo(12.5, 6)
    expect(budget.record('m1', usage, undefined, 'priority')).toBeCloseTo(40, 6)
    expect(budget.record('m1', usage, undefined, 'some-new-tier')).toBeCloseTo(40, 6)
  })
})

// Anthropic says which tier served an answer in `usage.service_tier`
// (`standard`, `priority`, `batch`; streamed: in `message_start`'s usage). It
// was not read: every Anthropic answer was charged as it was held — at the
// dearest tier listed — so a standard answer on a model with a priority
// price was charged twice its bill, and the answer did not say its tier.
describe('Anthropic’s service tier', () => {
  const anthropicAnswer = (tier: string) =>
    JSON.stringify({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm1',
      content: [{ type: 'text', text: 'hi' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 10, output_tokens: 10, service_tier: tier },
    })
  const event = (name: string, data: Record<string, unknown>) =>
    `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
  const anthropicStream = (tier: string) =>
    event('message_start', {
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'm1',
        content: [],
        usage: { input_tokens: 10, output_tokens: 1, service_tier: tier },
      },
    }) +
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hi' } }) +
    event('content_block_stop', { index: 0 }) +
    event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 10 } }) +
    event('message_stop', {})

  const servedBy = async (body: string, streamed: boolean) => {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': streamed ? 'text/event-stream' : 'application/json' },
      body,
    })
    try {
      const budget = new CostBudget({ limitUsd: 1000, prices })
      const options = {
        models: [anthropic({ baseURL: server.url, apiKey: 'sk-ant-test-0000', model: 'm1' })],
        limits: { budget, admission: false as const },
        retry: { budgets: false as const },
      }
      const answer = streamed
        ? await callModel({ ...options, request: { ...request(), stream: true } }).result
        : await callModel({ ...options, request: request() })
      return { answer, budget }
    } finally {
      await server.close()
    }
  }

  it.each([
    ['standard', 20],
    ['priority', 40],
  ])('a whole answer served at %s says so and is charged at that tier ($%i)', async (tier, usd) => {
    const { answer, budget } = await servedBy(anthropicAnswer(tier), false)
    expect(answer.serviceTier).toBe(tier)
    expect(budget.spentUsd).toBeCloseTo(usd, 6)
  })

  it.each([
    ['standard', 20],
    ['priority', 40],
  ])(
    'a streamed answer served at %s (message_start’s usage) says so and is charged at that tier ($%i)',
    async (tier, usd) => {
      const { answer, budget } = await servedBy(anthropicStream(tier), true)
      expect(answer.serviceTier).toBe(tier)
      expect(budget.spentUsd).toBeCloseTo(usd, 6)
    },
  )

  it('a batch answer (half the standard price) is charged no more than the standard price', async () => {
    const { answer, budget } = await servedBy(anthropicAnswer('batch'), false)
    expect(answer.serviceTier).toBe('batch')
    expect(budget.spentUsd).toBeCloseTo(20, 6)
  })
})

describe('a tier of another OpenAI-compatible provider', () => {
  it("Groq's on_demand (its standard tier) is priced at the model's price, not refused", () => {
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { 'llama-3.3-70b': { inputPerMTok: 1, outputPerMTok: 2 } },
    })
    expect(() => budget.assertPriced('llama-3.3-70b', undefined, 'on_demand')).not.toThrow()
    expect(() => budget.assertPriced('llama-3.3-70b', undefined, 'performance')).toThrow(
      /add it to the model's `serviceTiers`/,
    )
  })
})
