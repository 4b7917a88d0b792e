import { argumentsText } from '../dialects/blocks.js'
import type { ChatRequest, ChatResponse, ContentBlock } from '../types.js'
import { estimatedOutputTokens } from './billedFailure.js'
import type { CostBudget } from './CostBudget.js'
import { requestedServiceTier } from './requestedServiceTier.js'
import { textWeight } from './textWeight.js'

/**
 * Adds what an answered attempt costs to `budget` (at `provider`'s price; its
 * prompt estimated as `dialect` sends it) and returns it, in USD:
 * its usage, as the provider reported it; or, when it reported none (no
 * input token — every real call has some: an OpenAI-compatible server that
 * ignores `stream_options.include_usage`, a proxy that strips `usage`), the
 * prompt estimate plus the output it delivered, counted as the prompt
 * estimate counts text (`textWeight`) — at most the request's `maxTokens`
 * (`estimatedOutputTokens`) — as a cut
 * stream is charged. Charged nothing, such answers never tripped the limit,
 * however many were paid for. @internal
 */
export function chargeAnswer(
  budget: CostBudget,
  model: string,
  request: Pick<ChatRequest, 'messages' | 'tools' | 'extra' | 'maxTokens'>,
  response: Pick<ChatResponse, 'usage' | 'content' | 'usageReported' | 'serviceTier'>,
  provider?: string,
  dialect?: string,
): number {
  const { usage } = response
  // Billed at the tier that served it (OpenAI says, in the answer), else at
  // the one asked for: `auto` or none is held at the dearest.
  const tier = response.serviceTier ?? requestedServiceTier(request)
  // A dialect says when no usage came (`usageReported: false`); an adapter
  // of your own may not, and its zeros are told by the missing input.
  if (usage !== undefined && response.usageReported !== false && usage.inputTokens > 0)
    return budget.record(model, usage, provider, tier)
  return budget.recordEstimate(
    model,
    request,
    Math.max(
      usage?.outputTokens ?? 0,
      estimatedOutputTokens(budget, model, request, outputWeight(response.content), provider),
    ),
    provider,
    tier,
    dialect,
  )
}

/** The `textWeight` of the text, thinking, tool names and argument text in `content` (what a stream counts as delivered). */
function outputWeight(content: readonly ContentBlock[]): number {
  let weight = 0
  for (const block of content) {
    if (block.type === 'text') weight += textWeight(block.text)
    else if (block.type === 'thinking') weight += textWeight(block.thinking)
    else if (block.type === 'tool_call') {
      weight += textWeight(block.name)
      // Arguments too deep to write (`argumentsText`) count nothing: the
      // charge of an answer without usage is a lower bound anyway.
      weight += textWeight(block.rawArguments ?? argumentsText(block.arguments) ?? '')
    }
  }
  return weight
}
