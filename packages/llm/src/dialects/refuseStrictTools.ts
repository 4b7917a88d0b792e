import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ToolDefinition } from '../types.js'

/**
 * For a dialect without OpenAI's strict tool mode: a tool marked
 * `strict: true` is refused, naming it, rather than sent without the
 * guarantee the caller asked for.
 */
export function refuseStrictTools(tools: readonly ToolDefinition[], provider: string): void {
  const index = tools.findIndex((tool) => tool.strict === true)
  if (index < 0) return
  throw new InvalidChatRequestError(
    `tools[${index}].function.strict`,
    `${provider} has no equivalent of strict tool arguments`,
  )
}
