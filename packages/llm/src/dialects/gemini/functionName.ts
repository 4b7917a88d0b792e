import { quoted } from '@hourglass/core'
import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'

/**
 * What Gemini takes as a `FunctionDeclaration.name`: "Must start with a
 * letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores
 * (_), dots (.), colons (:), or dashes (-), with a maximum length of 64"
 * (its 400 `Invalid function name`, generativelanguage.googleapis.com).
 */
const GEMINI_FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/

/**
 * Throws naming the first tool whose name Gemini answers 400. OpenAI takes
 * a name that starts with a digit or a dash (`1password_read`, as MCP
 * servers name their tools); Gemini refuses the whole request for it, a 400
 * no fallback follows, whose message named `function_declarations[1]` of a
 * request the client never wrote. Refused here instead, before anything is
 * sent; not renamed, since the model's call would come back under a name
 * the client never declared.
 */
export function refuseGeminiFunctionNames(tools: readonly { name: string }[]): void {
  tools.forEach((tool, i) => {
    if (GEMINI_FUNCTION_NAME.test(tool.name)) return
    throw new InvalidChatRequestError(
      `tools[${i}].function.name`,
      `Gemini takes a function name that must start with a letter or an underscore, then letters, digits, _ . : or -, at most 64 in all; got ${quoted(tool.name, 64)}`,
      PROVIDER_REFUSES_VALUE,
    )
  })
}
