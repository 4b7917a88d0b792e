import type { GatewayConfig, ModelTarget } from '../config/gatewayConfigSchema.js'
import { type ChatRequest, estimatePromptTokens } from '../llm.js'

export interface ResolvedModel {
  /** The model entry that serves the request (after alias and route). */
  name: string
  /** Providers to try, in priority order. */
  targets: readonly ModelTarget[]
  /** Set when a route chose the entry: which side and why. */
  route?: { side: 'small' | 'large'; promptTokens: number; tools: boolean } | undefined
}

/**
 * The model name a client sent → the fallback list that serves it: aliases
 * first, then a routing rule (tools or a long prompt → the large model,
 * anything else → the small one). `undefined` when no such model exists.
 */
export function resolveModel(
  config: GatewayConfig,
  requested: string,
  request: Pick<ChatRequest, 'messages' | 'tools' | 'extra'>,
): ResolvedModel | undefined {
  const name = Object.hasOwn(config.aliases, requested)
    ? (config.aliases[requested] as string)
    : requested
  if (!Object.hasOwn(config.models, name)) return undefined
  const entry = config.models[name]
  if (entry?.fallback) return { name, targets: entry.fallback }
  const route = entry?.route
  if (route === undefined) return undefined
  const promptTokens = estimatePromptTokens(promptOf(request))
  const tools = (request.tools?.length ?? 0) > 0
  const side =
    (route.largeWhenTools && tools) || promptTokens > route.maxSmallPromptTokens ? 'large' : 'small'
  const chosen = config.models[route[side]]?.fallback
  // Validation guarantees a route points at a fallback list.
  if (chosen === undefined) return undefined
  return { name: route[side], targets: chosen, route: { side, promptTokens, tools } }
}

/**
 * What a route weighs as the prompt: the messages, the tools and a
 * `response_format` schema (billed as input as tools are) — not the
 * request's other fields (`seed`, `user`, `stream_options`, `metadata`, a
 * `prediction`, billed as output), which llm's estimate counts for a cost
 * bound's worst case and which moved a short prompt to `large`.
 */
function promptOf(
  request: Pick<ChatRequest, 'messages' | 'tools' | 'extra'>,
): Pick<ChatRequest, 'messages' | 'tools' | 'extra'> {
  const format = request.extra?.['response_format']
  return {
    messages: request.messages,
    tools: request.tools,
    extra: format === undefined ? undefined : { response_format: format },
  }
}

/** Every model name a client may send: entries and aliases. */
export function modelNames(config: GatewayConfig): string[] {
  return [...Object.keys(config.models), ...Object.keys(config.aliases)]
}
