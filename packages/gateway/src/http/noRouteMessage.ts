import { quoted } from '../llm.js'

/** How much of the client's path the 404 echoes (escapes count). */
const MAX_PATH_CHARS = 100

/**
 * A path the gateway serves, asked without its `/v1` (as the router matches:
 * any case, a trailing slash); a model id with an unescaped `/` too.
 */
const WITHOUT_V1 = /^\/(?:chat\/completions|models(?:\/[^/]+)*)\/?$/i

/**
 * `GET /v1/models/{id}` asked for an id with a `/` in it (`openai/gpt-4o`)
 * written unescaped, as curl or a hand-built URL sends it: two segments,
 * which no route matches. The official clients send it as `%2F` (the
 * router decodes it); the message said model retrieval was not served.
 */
const SLASHED_MODEL_ID = /^\/(?:v1\/)?models\/[^/]+\/./i

/**
 * The message of `startGateway`'s 404 for a path it does not serve. It was
 * `not found` alone: a client calling an endpoint the gateway has none of
 * (embeddings, the Responses API) could not tell a missing route from a
 * missing model, and one whose `baseURL` left out `/v1` — the commonest
 * mistake when switching a client over, which sends `/chat/completions` —
 * was told nothing of it. Names the method and the path (the client's:
 * escaped and cut, as other client text in messages), what is served, and
 * for a gateway path without its `/v1` or a model id with an unescaped `/`,
 * the fix. OpenAI's own 404 names the method and path too (`Invalid URL
 * (POST /v1/embeddings)`).
 */
export function noRouteMessage(method: string | undefined, path: string): string {
  const served =
    'this gateway serves POST /v1/chat/completions, GET /v1/models and GET /v1/models/{id}'
  let hint = WITHOUT_V1.test(path) ? "; the client's baseURL must end in /v1" : ''
  // Only where a model is retrieved: escaping helps no other method.
  if ((method === 'GET' || method === 'HEAD') && SLASHED_MODEL_ID.test(path)) {
    hint += '; a / in a model id is sent as %2F'
  }
  return `no route for ${(method ?? 'GET').slice(0, 20)} ${quoted(path, MAX_PATH_CHARS)}: ${served}${hint}`
}
