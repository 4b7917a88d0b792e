import type { ProviderRoute } from './types.js'
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
  const gemini = /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path)
  if (gemini !== null) {
    const streamed = gemini[2] === 'streamGenerateContent'
    const sse = streamed && query['alt'] === 'sse'
    return {
      route: 'gemini',
      // Without alt=sse, streamGenerateContent answers the stream's chunks as one JSON array.
      wire: streamed && !sse ? geminiJsonArray : geminiGenerate,
      model: decodeURIComponent(gemini[1]!),
      stream: sse,
    }
  }
  const ernie = /\/wenxinworkshop\/chat\/([^/]+)$/.exec(path)
  if (ernie !== null)
    return { route: 'ernie', wire: ernieChat, model: decodeURIComponent(ernie[1]!), stream }
  return { route: 'unknown', wire: undefined, model, stream }
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
