import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import { ANTHROPIC_TOOL_USE_PROMPT_TOKENS } from '../../src/budget/toolUsePromptTokens.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import type { ChatRequest, ToolDefinition } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

// Anthropic adds a tool-use system prompt to every request that carries
// tools (346 input tokens for its current models with tool_choice auto, per
// its tool-use pricing docs), billed beside the tools' definitions. The
// "pessimistic" estimate left it out: "What's the weather?" with one small
// tool was estimated at ~40 tokens and billed ~400, so the cost budget held
// a tenth of the attempt's price and admission weighed it as little.

const fakes = useFakes()

const weather: ToolDefinition = {
  name: 'weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
}
const asked: ChatRequest = { messages: [user("What's the weather in Paris?")], maxTokens: 0 }

describe('the prompt estimate counts the tool-use system prompt Anthropic adds', () => {
  it('for the anthropic dialect when tools are offered, or the history called one; for no other', () => {
    const withTools = { ...asked, tools: [weather] }
    const called: ChatRequest = {
      messages: [
        ...asked.messages,
        {
          role: 'assistant',
          content: [{ type: 'tool_call', id: 't1', name: 'weather', arguments: { city: 'Paris' } }],
        },
        { role: 'tool', content: [{ type: 'tool_result', toolCallId: 't1', content: '18 °C' }] },
      ],
      maxTokens: 0,
    }
    const added = (request: ChatRequest, dialect: string) =>
      estimatePromptTokens(request, dialect) - estimatePromptTokens(request)
    expect([
      added(withTools, 'anthropic'),
      added(called, 'anthropic'),
      added(asked, 'anthropic'),
      added(withTools, 'openai'),
      added(withTools, 'gemini'),
    ]).toEqual([ANTHROPIC_TOOL_USE_PROMPT_TOKENS, ANTHROPIC_TOOL_USE_PROMPT_TOKENS, 0, 0, 0])
    expect(ANTHROPIC_TOOL_USE_PROMPT_TOKENS).toBe(346)
  })

  it('callModel holds it against the budget for an Anthropic model, and not for an OpenAI one', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: reply.text('18 °C') })
    const openai = await fakes.start({ dialect: 'openai', reply: reply.text('18 °C') })
    // $1 per million tokens either way: a limit of 300 tokens' worth, which
    // the request without the system prompt fits and with it does not.
    const price = { inputPerMTok: 1, outputPerMTok: 1 }
    const limitUsd = 300 / 1e6
    const request = { ...asked, maxTokens: 16, tools: [weather] }
    expect(estimatePromptTokens(request) + 16).toBeLessThan(300)
    const claude = await callModel({
      models: [fakes.adapter(anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-x' }))],
      request,
      limits: {
        budget: new CostBudget({ limitUsd, prices: { 'claude-x': price } }),
        admission: false,
      },
    }).catch((e: unknown) => e)
    expect(isBudgetExceeded(claude)).toBe(true)
    expect(fake.requests).toHaveLength(0)
    const gpt = await callModel({
      models: [
        fakes.adapter(openAICompatible({ baseURL: openai.baseURL, apiKey: 'k', model: 'gpt-x' })),
      ],
      request,
      limits: {
        budget: new CostBudget({ limitUsd, prices: { 'gpt-x': price } }),
        admission: false,
      },
    })
    expect(gpt.text).toBe('18 °C')
  })
})
