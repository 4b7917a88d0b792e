import { nonFiniteIn } from '../call/nonFiniteIn.js'
import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ToolCallBlock } from '../types.js'
import { rewritesAnInteger } from './roundedByParsing.js'

/**
 * A tool call's arguments as the JSON object Anthropic (`tool_use.input`)
 * and Gemini (`functionCall.args`) take. Arguments that came as text
 * (`rawArguments`) must be a JSON object — empty text is `{}`, as models send
 * for a call without arguments — and hold no integer past 2^53, which
 * parsing has already rounded: the object would then not say what the text
 * said. Anything else throws `InvalidChatRequestError` at `field`, instead of
 * sending another value. A caller's own value is sent as it is (`undefined`
 * and `null` as `{}`), except that it too must be an object.
 */
export function argumentsObject(
  block: ToolCallBlock,
  field: string,
  provider: string,
): Record<string, unknown> {
  const args = block.arguments
  if (args == null && block.rawArguments === undefined) return {}
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new InvalidChatRequestError(
      field,
      `${provider} takes tool-call arguments only as a JSON object; got ${kindOf(block)}`,
    )
  }
  if (block.rawArguments !== undefined && rewritesAnInteger(block.rawArguments)) {
    throw new InvalidChatRequestError(
      field,
      `holds an integer beyond ±2^53, which ${provider} would get with other digits (it takes the arguments as an object, not as text)`,
    )
  }
  // The text parsed to a number JSON cannot write (`{"t":1e999}` → Infinity):
  // sent as an object it went out `{"t":null}`. Calls made from values are
  // refused before the build (`checkCallOptions`); one that kept its text
  // is left to the wire, which on OpenAI's sends the text as it is.
  const nonFinite = block.rawArguments === undefined ? undefined : nonFiniteIn(args)
  if (nonFinite !== undefined) {
    throw new InvalidChatRequestError(
      `${field}${nonFinite.path}`,
      `holds a number beyond JSON's range (${nonFinite.value} once parsed), which ${provider} would get as null (it takes the arguments as an object, not as text)`,
    )
  }
  return args as Record<string, unknown>
}

function kindOf(block: ToolCallBlock): string {
  const args = block.arguments
  if (args === null) return 'null'
  if (Array.isArray(args)) return 'an array'
  if (typeof args === 'string') {
    // The gateway keeps text that does not parse as JSON as it is.
    return block.rawArguments !== undefined && !block.rawArguments.trimStart().startsWith('"')
      ? 'text that is not JSON'
      : 'a string'
  }
  return `a ${typeof args}`
}

/**
 * Whether `value` holds an integer beyond ±2^53 (one JSON parsing may have
 * rounded). Walked with a stack, not recursion: a caller's value may nest
 * deeper than the stack allows.
 */
export function holdsUnsafeInteger(value: object): boolean {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const next = stack.pop()
    if (typeof next === 'number') {
      if (Number.isInteger(next) && !Number.isSafeInteger(next)) return true
    } else if (typeof next === 'object' && next !== null) {
      for (const key of Object.keys(next)) stack.push((next as Record<string, unknown>)[key])
    }
  }
  return false
}
