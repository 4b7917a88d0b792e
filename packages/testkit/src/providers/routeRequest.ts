import type { ErrorReply, ProviderRoute } from './types.js'
import { anthropicMessages } from './wire/anthropicMessages.js'
import { ernieChat } from './wire/ernieChat.js'
import { geminiGenerate } from './wire/geminiGenerate.js'
import { geminiJsonArray } from './wire/geminiJsonArray.js'
import { openAIChat } from './wire/openAIChat.js'
import type { WireFormat } from './wire/WireFormat.js'

export interface Route {
  route: ProviderRoute
  wire: WireFormat | undefined
  model: string | undefined
  stream: boolean
  /**
   * The API's own refusal of a request at a path it has (a Gemini model
   * name that cannot exist): sent, like an unknown path's 404, before any
   * scripted reply or rate-limit window is looked at. Only with no `wire`.
   */
  refusal?: ErrorReply | undefined
}

/**
 * Which API a request speaks, from its method and path — every fake answers
 * every format at its usual path, so one fake can stand in for a provider
 * whatever base URL the client was given.
 */
export function routeRequest(
  method: string,
  path: string,
  query: Record<string, string>,
  body: unknown,
): Route {
  const json = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  const model = typeof json['model'] === 'string' ? json['model'] : undefined
  const stream = json['stream'] === true
  if (method === 'GET' && /\/models\/?$/.test(path)) {
    return { route: 'models', wire: undefined, model: undefined, stream: false }
  }
  if (method !== 'POST') return { route: 'unknown', wire: undefined, model, stream: false }
  if (path.endsWith('/chat/completions'))
    return { route: 'openai-chat', wire: openAIChat, model, stream }
  if (path.endsWith('/messages'))
    return { route: 'anthropic-messages', wire: anthropicMessages, model, stream }
  const gemini = GEMINI_METHOD.exec(path)
  if (gemini !== null) return geminiRoute(path, query, gemini)
  const ernie = /\/wenxinworkshop\/chat\/([^/]+)$/.exec(path)
  if (ernie !== null)
    return { route: 'ernie', wire: ernieChat, model: decodeURIComponent(ernie[1]!), stream }
  return { route: 'unknown', wire: undefined, model, stream }
}

/**
 * `…/{models|tunedModels}/{id}:generateContent` (or `:streamGenerateContent`):
 * Google routes `{model=models/*}` and `{model=tunedModels/*}`, the id one
 * path segment — `[^/:]+` as it is on the wire, still percent-encoded.
 */
const GEMINI_METHOD = /\/(models|tunedModels)\/([^/:]+):(generateContent|streamGenerateContent)$/

/**
 * The Gemini route, as Google's routing reads it: the id segment is
 * percent-decoded into the resource name, so an escaped `/` in it
 * (`/models/models%2Fgemini-2.5-flash`, a resource name escaped whole) asks
 * for `models/models/gemini-2.5-flash` — no model has that name, and Google
 * answers 404 `NOT_FOUND` ("… is not found for API version v1beta, or is not
 * supported for generateContent"). The fake decoded the segment and answered
 * 200 for the model `models/gemini-2.5-flash`, so a client that escaped the
 * whole name passed every test and failed every real call. A tuned model is
 * asked at its own collection (`tunedModels/{id}:generateContent`,
 * ai.google.dev/api/generate-content); its record's `model` is that
 * resource name, a base model's the bare id, as before.
 */
function geminiRoute(path: string, query: Record<string, string>, match: RegExpExecArray): Route {
  const collection = match[1] as 'models' | 'tunedModels'
  const method = match[3] as string
  const streamed = method === 'streamGenerateContent'
  const id = decodeSegment(match[2] as string)
  if (id === undefined || id.includes('/')) {
    const name = `${collection}/${id ?? (match[2] as string)}`
    return {
      route: 'gemini',
      wire: undefined,
      model: id,
      stream: false,
      refusal: geminiModelNotFound(name, apiVersion(path), method),
    }
  }
  const sse = streamed && query['alt'] === 'sse'
  return {
    route: 'gemini',
    // Without alt=sse, streamGenerateContent answers the stream's chunks as one JSON array.
    wire: streamed && !sse ? geminiJsonArray : geminiGenerate,
    model: collection === 'models' ? id : `${collection}/${id}`,
    stream: sse,
  }
}

/** A malformed escape (`%E0`) reads as no name at all: the 404 too, not a 500 from the fake. */
function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/** The API version the path names (`/v1beta/…`, `/v1/…`), as Google's message does. */
function apiVersion(path: string): string {
  return /\/(v\d+[a-z0-9]*)\//.exec(path)?.[1] ?? 'v1beta'
}

/** Google's 404 for a model name that does not exist (its words, `google.rpc.Status`). */
function geminiModelNotFound(name: string, version: string, method: string): ErrorReply {
  return {
    kind: 'error',
    status: 404,
    body: {
      error: {
        code: 404,
        message: `${name.slice(0, 200)} is not found for API version ${version}, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`,
        status: 'NOT_FOUND',
      },
    },
  }
}

/** The API key a request carries, in any provider's style. */
export function apiKeyOf(
  headers: Record<string, string>,
  query: Record<string, string>,
): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(headers['authorization'] ?? '')
  return (
    bearer?.[1] ??
    headers['x-api-key'] ??
    headers['x-goog-api-key'] ??
    query['key'] ??
    query['access_token']
  )
}
