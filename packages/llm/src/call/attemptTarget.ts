import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import type { LlmAttemptMessage, LlmRequestParams } from '../channels.js'
import type { ChatRequest } from '../types.js'
import { outputTypeOf } from './outputTypeOf.js'

type Server = Pick<LlmAttemptMessage, 'serverAddress' | 'serverPort'>

/** Each adapter's host and port, parsed once: its `baseURL` does not change. */
const servers = new WeakMap<ModelAdapter, Server>()

/**
 * The host and port the adapter sends to, from its `baseURL` (the scheme's
 * default port when the URL names none); nothing for an adapter without a
 * `baseURL` or with one that is no URL. Read only while someone subscribes
 * to `hourglass:llm:attempt`.
 */
export function serverOf(adapter: ModelAdapter): Server {
  let server = servers.get(adapter)
  if (server === undefined) {
    server = parseServer(adapter.baseURL)
    servers.set(adapter, server)
  }
  return server
}

function parseServer(baseURL: string | undefined): Server {
  if (typeof baseURL !== 'string') return {}
  let url: URL
  try {
    url = new URL(baseURL)
  } catch {
    return {}
  }
  if (url.hostname === '') return {}
  // `[::1]` is the URL's spelling; the address is `::1`.
  const serverAddress = url.hostname.replace(/^\[(.*)\]$/, '$1')
  const port =
    url.port !== ''
      ? Number(url.port)
      : url.protocol === 'https:'
        ? 443
        : url.protocol === 'http:'
          ? 80
          : undefined
  return port === undefined ? { serverAddress } : { serverAddress, serverPort: port }
}

/**
 * The generation parameters the caller set on the request sent to this
 * model (the GenAI conventions' `gen_ai.request.*`): `maxTokens` always,
 * the others only when set to a value of their type. `seed`, the penalties,
 * `top_k` and `response_format` come from `extra`, in OpenAI's wire names.
 */
export function requestParamsOf(request: ChatRequest): LlmRequestParams {
  const params: LlmRequestParams = { maxTokens: request.maxTokens }
  if (finite(request.temperature)) params.temperature = request.temperature
  if (finite(request.topP)) params.topP = request.topP
  const stop = request.stop
  if (Array.isArray(stop) && stop.length > 0 && stop.every((s) => typeof s === 'string')) {
    // Bounded: nothing caps a caller's list (a provider refuses more than
    // its few, after the attempt is made), and one request's megabytes on
    // every attempt's span can fill an export batch past a collector's limit.
    params.stopSequences =
      stop.length <= MAX_STOP_SEQUENCES && stop.every((s) => s.length <= MAX_STOP_LENGTH)
        ? stop
        : stop.slice(0, MAX_STOP_SEQUENCES).map(cutStop)
  }
  const extra = request.extra
  if (typeof extra === 'object' && extra !== null) {
    if (Number.isInteger(extra.seed)) params.seed = extra.seed as number
    if (finite(extra.frequency_penalty)) params.frequencyPenalty = extra.frequency_penalty
    if (finite(extra.presence_penalty)) params.presencePenalty = extra.presence_penalty
    if (finite(extra.top_k)) params.topK = extra.top_k
    const outputType = outputTypeOf(extra.response_format)
    if (outputType !== undefined) params.outputType = outputType
  }
  return params
}

/** What a chat span keeps of `stop`: OpenAI takes 4 sequences, Anthropic's lists run longer. */
const MAX_STOP_SEQUENCES = 16
const MAX_STOP_LENGTH = 256

/** Cut to MAX_STOP_LENGTH, never between the halves of a surrogate pair (an emoji). */
function cutStop(sequence: string): string {
  if (sequence.length <= MAX_STOP_LENGTH) return sequence
  return sequence.slice(0, MAX_STOP_LENGTH).replace(/[\uD800-\uDBFF]$/, '')
}

function finite(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value)
}
