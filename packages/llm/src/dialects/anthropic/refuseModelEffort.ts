import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { continuesUnthoughtTurn, type Turn } from './continuesUnthoughtTurn.js'
import { lacksEffort, takesAdaptiveThinking } from './lacksEffort.js'
import { takesThinking } from './refuseModelThinking.js'

/**
 * A `reasoning_effort` level the model does not take (`lacksEffort`:
 * `xhigh` to Claude Opus and Sonnet 4.6, `xhigh` and `max` to a model that
 * thinks by a budget) throws naming the field and the model, before sending
 * (Anthropic's 400 goes to no fallback). A value only these models refuse
 * (`provider_value`), so called after every other check of the request, as
 * `refuseModelThinking`, and `applyAnthropicThinking` turns no thinking on
 * for it (what Anthropic refuses beside thinking would hide it): a gateway
 * checking a fallback list skips such a model rather than refuse a request
 * its first model takes (`xhigh` to Opus 4.7 with Sonnet 4.6 behind was
 * refused whole). Not for a model that does not think (`refuseModelThinking`
 * says that) nor a request continuing an unthought turn, which sends no
 * thinking.
 */
export function refuseModelEffort(model: string, effort: unknown, turns: readonly Turn[]): void {
  if (!lacksEffort(model, effort)) return
  if (!takesThinking(model) || continuesUnthoughtTurn(turns)) return
  throw new InvalidChatRequestError(
    'reasoning_effort',
    takesAdaptiveThinking(model)
      ? `${model} takes no xhigh effort (Claude Opus 4.7 and Sonnet 5 and later do): use max, high, medium, low or minimal`
      : `${model} takes a thinking budget, and ${effort} has none (${effort === 'max' ? 'Claude 4.6' : 'Claude Opus 4.7 and Sonnet 5'} and later take it): use minimal, low, medium or high`,
    PROVIDER_REFUSES_VALUE,
  )
}
