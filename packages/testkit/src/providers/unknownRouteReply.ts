import type { ErrorReply, ProviderDialect } from './types.js'

/**
 * The 404 a provider answers a path (or method) it has no API at, in its
 * own error shape. Sent before any scripted reply or rate-limit window is
 * looked at: a scripted error used to go out on any path, so a client
 * posting to `/v1/chat/completion` got the 429 its test enqueued and passed
 * a retry test the real API would have answered 404 — and used up the
 * reply meant for the request after it.
 * - OpenAI and the compatible APIs: `Invalid URL (POST /v1/…)`,
 *   `invalid_request_error` (OpenAI's words for a path it has not);
 * - Anthropic: `{"type":"error","error":{"type":"not_found_error",…}}`;
 * - Gemini: `google.rpc.Status` `NOT_FOUND`.
 */
export function unknownRouteReply(
  dialect: ProviderDialect,
  method: string,
  path: string,
): ErrorReply {
  const where = `${method} ${path.slice(0, 200)}`
  switch (dialect) {
    case 'anthropic':
      return {
        kind: 'error',
        status: 404,
        body: {
          type: 'error',
          error: { type: 'not_found_error', message: `Not Found (${where})` },
        },
      }
    case 'gemini':
      return {
        kind: 'error',
        status: 404,
        body: {
          error: {
            code: 404,
            message: `The requested URL (${where}) was not found on this server.`,
            status: 'NOT_FOUND',
          },
        },
      }
    default:
      return {
        kind: 'error',
        status: 404,
        body: {
          error: {
            message: `Invalid URL (${where})`,
            type: 'invalid_request_error',
            param: null,
            code: null,
          },
        },
      }
  }
}
