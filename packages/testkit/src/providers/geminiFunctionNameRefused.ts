import { geminiErrors } from './errors/geminiErrors.js'
import type { ErrorReply, ProviderRoute } from './types.js'

/**
 * What Gemini takes as a `FunctionDeclaration.name`: a letter or `_` first,
 * then letters, digits, `_ . : -`, 64 in all.
 */
const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/

const WHY =
  'Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.'

/**
 * Gemini's 400 `INVALID_ARGUMENT` for a request declaring a function whose
 * name it refuses (one starting with a digit or a dash, as MCP servers name
 * tools: `1password_read`), every such declaration named, in its words:
 * "The GenerateContentRequest proto is invalid:\n  * tools[0].function_declarations[53].name:
 * [FIELD_INVALID] Invalid function name. …" (quoted from the API in
 * kaitranntt/ccs#25 and #219). The fake answered 200 and called the tool,
 * so a client that declared one passed against it and had every request
 * refused by Google. `functionDeclarations` or `function_declarations`: the
 * REST API takes both. A name that is no string, or empty, is left to the
 * API's other checks.
 */
export function geminiFunctionNameRefused(
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  if (route !== 'gemini') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const tools = (body as Record<string, unknown>)['tools']
  if (!Array.isArray(tools)) return undefined
  const bad: string[] = []
  tools.forEach((tool: unknown, i) => {
    if (typeof tool !== 'object' || tool === null) return
    const t = tool as Record<string, unknown>
    const declarations = t['functionDeclarations'] ?? t['function_declarations']
    if (!Array.isArray(declarations)) return
    declarations.forEach((declaration: unknown, j) => {
      const name = (declaration as { name?: unknown } | null)?.name
      if (typeof name !== 'string' || name === '' || FUNCTION_NAME.test(name)) return
      bad.push(`  * tools[${i}].function_declarations[${j}].name: [FIELD_INVALID] ${WHY}`)
    })
  })
  if (bad.length === 0) return undefined
  return geminiErrors.invalidArgument(
    `The GenerateContentRequest proto is invalid:\n${bad.join('\n')}`,
  )
}
