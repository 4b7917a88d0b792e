import type { ProviderDialect, ProviderRoute } from './types.js'

/** The beta that turned fine-grained tool streaming on for every tool, before `eager_input_streaming`. */
const FINE_GRAINED_BETA = 'fine-grained-tool-streaming-2025-05-14'

/**
 * Which of the request's tools Anthropic streams the input of as it is
 * generated (fine-grained tool streaming): a tool that sets
 * `eager_input_streaming: true`, or every tool under the old beta header
 * (platform.claude.com, "Fine-grained tool streaming"). The others' input is
 * buffered a parameter at a time (`bufferedInput`). Only the `anthropic`
 * dialect buffers: another dialect's Anthropic-compatible API is not
 * documented to, and keeps streaming every piece.
 */
export function anthropicEagerInput(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
  headers: Record<string, string>,
): (toolName: string) => boolean {
  if (dialect !== 'anthropic' || route !== 'anthropic-messages') return () => true
  const betas = (headers['anthropic-beta'] ?? '').split(',').map((b) => b.trim())
  if (betas.includes(FINE_GRAINED_BETA)) return () => true
  const tools = (body as { tools?: unknown } | null)?.tools
  const eager = new Set<unknown>()
  if (Array.isArray(tools)) {
    for (const tool of tools as { name?: unknown; eager_input_streaming?: unknown }[]) {
      if (tool?.eager_input_streaming === true) eager.add(tool.name)
    }
  }
  return (toolName) => eager.has(toolName)
}
