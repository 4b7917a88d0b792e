import { anthropicErrors } from './errors/anthropicErrors.js'
import { geminiErrors } from './errors/geminiErrors.js'
import { openAIErrors } from './errors/openAIErrors.js'
import type { ErrorReply, ProviderRoute } from './types.js'

/**
 * The 400 a real API answers a request that sets how tools are used without
 * giving any tool, in its own error shape; undefined when the request is
 * not one. Answered 200, a client that sent one passed its tests against
 * the fake and failed against the provider:
 * - OpenAI-compatible chat: `tools: []` ("Invalid 'tools': empty array…",
 *   `param: 'tools'`, `code: 'empty_array'`: openai-python's error as quoted
 *   in speaches-ai/speaches), else `tool_choice` or `parallel_tool_calls`
 *   without `tools` ("'parallel_tool_calls' is only allowed when 'tools' are specified").
 * - Anthropic: `tool_choice` without `tools` ("tool_choice may only be
 *   specified while providing tools").
 * - Gemini: a `toolConfig.functionCallingConfig` without a tool's
 *   `functionDeclarations` ("Function calling config is set without
 *   function_declarations"); the REST API takes snake_case names too.
 */
export function toolSettingsWithoutTools(
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  const json = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  switch (route) {
    case 'openai-chat': {
      // An empty list fails the schema before any tool setting is read: a
      // 400 naming `tools`, whatever else the request sets.
      if (Array.isArray(json['tools']) && json['tools'].length === 0) {
        return withParam(
          openAIErrors.badRequest(
            "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
          ),
          'tools',
          'empty_array',
        )
      }
      if (isPresent(json['tools'])) return undefined
      const param = ['tool_choice', 'parallel_tool_calls'].find((name) => isSet(json[name]))
      if (param === undefined) return undefined
      return withParam(
        openAIErrors.badRequest(
          `Invalid value for '${param}': '${param}' is only allowed when 'tools' are specified.`,
        ),
        param,
      )
    }
    case 'anthropic-messages':
      return isSet(json['tool_choice']) && !isPresent(json['tools'])
        ? anthropicErrors.invalidRequest('tool_choice may only be specified while providing tools.')
        : undefined
    case 'gemini': {
      const config = (json['toolConfig'] ?? json['tool_config']) as
        | Record<string, unknown>
        | null
        | undefined
      const calling = config?.['functionCallingConfig'] ?? config?.['function_calling_config']
      if (!isSet(calling)) return undefined
      const tools = Array.isArray(json['tools']) ? (json['tools'] as unknown[]) : []
      const declared = tools.some((tool) => {
        const t = (typeof tool === 'object' && tool !== null ? tool : {}) as Record<string, unknown>
        return isPresent(t['functionDeclarations'] ?? t['function_declarations'])
      })
      return declared
        ? undefined
        : geminiErrors.invalidArgument(
            'Function calling config is set without function_declarations.',
          )
    }
    default:
      return undefined
  }
}

/** Set in the JSON: `null` reads as left out, as the APIs read it. */
function isSet(value: unknown): boolean {
  return value !== undefined && value !== null
}

/** A list of tools with at least one in it. */
function isPresent(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0
}

/** OpenAI names the field at fault (and, for schema failures, what was wrong with it). */
function withParam(reply: ErrorReply, param: string, code: string | null = null): ErrorReply {
  const body = reply.body as { error: Record<string, unknown> }
  return { ...reply, body: { error: { ...body.error, param, code } } }
}
