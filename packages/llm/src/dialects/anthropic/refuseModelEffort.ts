import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { continuesUnthoughtTurn, type Turn } from './continuesUnthoughtTurn.js'
import { takesThinking } from './refuseModelThinking.js'
import { lacksXhigh, takesAdaptiveThinking } from './thinking.js'

/**
 * A `reasoning_effort` level the model does not take throws naming the
 * field and the model, before sending (Anthropic's 400 goes to no
 * fallback): `xhigh` to Claude Opus and Sonnet 4.6 (it came with Opus 4.7
 * and Sonnet 5), `xhigh` and `max` to a model that thinks by a budget
 * (before Claude 4.6: neither has a budget). A value only these models
 * refuse (`provider_value`), so called after every other check of the
 * request, as `refuseModelThinking`: a gateway checking a fallback list
 * skips such a model rather than refuse a request its first model takes
 * (`xhigh` to Opus 4.7 with Sonnet 4.6 behind it was refused whole). Not
 * for a model that does not think (`refuseModelThinking` says that) nor a
 * request continuing an unthought turn, which sends no thinking.
 */
export function refuseModelEffort(model: string, effort: unknown, turns: readonly Turn[]): void {
  if (effort !== 'xhigh' && effort !== 'max') return
  if (!takesThinking(model) || continuesUnthoughtTurn(turns)) return
  if (takesAdaptiveThinking(model)) {
    if (effort === 'xhigh' && lacksXhigh(model)) {
      throw new InvalidChatRequestError(
        'reasoning_effort',
        `${model} takes no xhigh effort (Claude Opus 4.7 and Sonnet 5 and later do): use max, high, medium, low or minimal`,
        PROVIDER_REFUSES_VALUE,
      )
    }
    return
  }
  throw new InvalidChatRequestError(
    'reasoning_effort',
    `${model} takes a thinking budget, and ${effort} has none (${effort === 'max' ? 'Claude 4.6' : 'Claude Opus 4.7 and Sonnet 5'} and later take it): use minimal, low, medium or high`,
    PROVIDER_REFUSES_VALUE,
  )
}
