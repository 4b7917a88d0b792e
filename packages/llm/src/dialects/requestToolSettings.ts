import { quoted } from '@hourglass/core'
import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../types.js'

/**
 * `request.extra` with its Chat Completions tool settings checked against
 * `request.tools`, for every dialect's builder (the settings are in OpenAI's
 * wire shape whichever provider they go to).
 *
 * Without tools, each provider answers a tool setting with a 400, a bad
 * request that never falls back: OpenAI "'parallel_tool_calls' is only
 * allowed when 'tools' are specified", Anthropic "tool_choice may only be
 * specified while providing tools", Gemini "Function calling config is set
 * without function_declarations". A setting that means nothing without tools
 * (`parallel_tool_calls`, `tool_choice` `auto` or `none`: no call either way)
 * is left out, as the OpenAI Agents SDK leaves `parallel_tool_calls` out
 * (openai-agents-python #4330; LiteLLM's Anthropic translation forwards it,
 * and its caller gets the 400). One that demands a call that cannot happen (`required`, a named
 * function, any other kind of choice) throws `InvalidChatRequestError`
 * naming `tool_choice`: dropped, the caller would get text where it asked
 * for a tool call. With tools, a named function that is not one of them
 * throws naming `tool_choice.function.name`.
 *
 * The caller's object is not written to; it is returned as it is when
 * nothing is left out.
 */
export function requestToolSettings(request: ChatRequest): Record<string, unknown> | undefined {
  const extra = request.extra
  if (extra === undefined) return undefined
  const choice = extra['tool_choice']
  const parallel = extra['parallel_tool_calls']
  const tools = request.tools ?? []
  // Tools sent through `extra` (OpenAI's custom tools, or function tools a
  // caller writes in the wire shape) are tools too: go as they are.
  const extraTools = extra['tools']
  if (Array.isArray(extraTools) && extraTools.length > 0) return extra
  // An empty list is no tools, and left out: OpenAI and DeepSeek refuse it
  // ("Invalid 'tools': empty array"), and it would replace `request.tools`.
  const emptyTools = Array.isArray(extraTools)
  if (tools.length > 0) {
    const name = namedFunction(choice)
    if (name !== undefined && !tools.some((tool) => tool.name === name)) {
      throw new InvalidChatRequestError(
        'tool_choice.function.name',
        `no tool named ${quoted(name, 64)} in tools`,
      )
    }
    return emptyTools ? without(extra, ['tools']) : extra
  }
  const setChoice = choice !== undefined && choice !== null
  if (setChoice && choice !== 'auto' && choice !== 'none') {
    throw new InvalidChatRequestError(
      'tool_choice',
      'names tools or asks for a tool call, and the request has no tools',
    )
  }
  if (!setChoice && (parallel === undefined || parallel === null) && !emptyTools) return extra
  return without(
    extra,
    emptyTools
      ? ['tool_choice', 'parallel_tool_calls', 'tools']
      : ['tool_choice', 'parallel_tool_calls'],
  )
}

/** A copy of `extra` without `names`: the caller's object is not written to. */
function without(
  extra: Record<string, unknown>,
  names: readonly string[],
): Record<string, unknown> {
  const kept = { ...extra }
  for (const name of names) delete kept[name]
  return kept
}

/** The function a `{ type: 'function', function: { name } }` choice forces. */
function namedFunction(choice: unknown): string | undefined {
  if (typeof choice !== 'object' || choice === null) return undefined
  const { type, function: fn } = choice as { type?: unknown; function?: unknown }
  const name = (fn as { name?: unknown } | null | undefined)?.name
  return type === 'function' && typeof name === 'string' ? name : undefined
}
