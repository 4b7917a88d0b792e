import { geminiErrors } from './errors/geminiErrors.js'
import type { ErrorReply, ProviderRoute } from './types.js'

/**
 * Gemini's 400 `INVALID_ARGUMENT` "Function calling with a response mime
 * type: 'application/json' is unsupported" (its words, quoted from the API in
 * googleapis/python-genai#867, symfony/ai#1777 for gemini-2.5-flash,
 * google-gemini/deprecated-generative-ai-python#515 for 1.5 Flash): a request
 * to a model before Gemini 3 that declares functions and asks for JSON
 * (`generationConfig.responseMimeType: "application/json"`). Gemini 3 takes
 * both ("Structured Outputs with tools"). The fake answered 200 and called
 * the tool, so a client that sent both (the OpenAI Agents SDK does, for an
 * agent with an `output_type` and tools) passed against it and had every
 * such request refused by Google. Not refused with function calling off
 * (`functionCallingConfig.mode: NONE`), which Gemini 2.5 answers
 * (google/adk-python#5735), nor for a model whose name says no version (a
 * tuned model). camelCase or snake_case: the REST API takes both.
 */
export function geminiJsonWithToolsRefused(
  route: ProviderRoute,
  model: string | undefined,
  body: unknown,
): ErrorReply | undefined {
  if (route !== 'gemini' || model === undefined) return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const json = body as Record<string, unknown>
  const major = /^gemini-(\d+)/.exec(model)?.[1]
  if (major === undefined || Number(major) >= 3) return undefined
  const config = field(json, 'generationConfig', 'generation_config')
  if (field(config, 'responseMimeType', 'response_mime_type') !== 'application/json') {
    return undefined
  }
  if (!declaresFunctions(json['tools'])) return undefined
  const calling = field(
    field(json, 'toolConfig', 'tool_config'),
    'functionCallingConfig',
    'function_calling_config',
  )
  if (field(calling, 'mode', 'mode') === 'NONE') return undefined
  return geminiErrors.invalidArgument(
    "Function calling with a response mime type: 'application/json' is unsupported",
  )
}

/** `value[camel]`, else `value[snake]`; undefined for a value that is no object. */
function field(value: unknown, camel: string, snake: string): unknown {
  if (typeof value !== 'object' || value === null) return undefined
  const object = value as Record<string, unknown>
  return object[camel] ?? object[snake]
}

function declaresFunctions(tools: unknown): boolean {
  if (!Array.isArray(tools)) return false
  return tools.some((tool: unknown) => {
    const declarations = field(tool, 'functionDeclarations', 'function_declarations')
    return Array.isArray(declarations) && declarations.length > 0
  })
}
