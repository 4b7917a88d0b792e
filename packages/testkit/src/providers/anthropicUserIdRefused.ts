import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/** `metadata.user_id`'s `maxLength` in Anthropic's API reference. */
const MAX_USER_ID_CHARS = 256

/** An email address anywhere in the id: a local part, an `@`, a domain with a dot. */
const EMAIL = /[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+/

/**
 * Anthropic's 400 `invalid_request_error` for a `metadata.user_id` it will
 * not keep; undefined otherwise. The field is for "a uuid, hash value, or
 * other opaque identifier" of at most 256 characters (docs.claude.com,
 * Messages API): a longer one fails the schema ("metadata.user_id: String
 * should have at most 256 characters", its validator's words for every
 * `maxLength`), and one holding an email address is refused by name
 * ("metadata.user_id: user_id appears to contain an email address. Please
 * send a uuid or hash value…", quoted from the API in BerriAI/litellm#10106).
 * The fake answered both 200, so a client or gateway that passed an OpenAI
 * `user` (an email is what OpenAI's users often send) through to Anthropic
 * passed against it and failed against the API. Counted in characters, as
 * the API counts them, not UTF-16 units. Anthropic's own API only, as
 * `anthropicMaxTokensMissing`.
 */
export function anthropicUserIdRefused(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  if (dialect !== 'anthropic' || route !== 'anthropic-messages') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const metadata = (body as Record<string, unknown>)['metadata']
  if (typeof metadata !== 'object' || metadata === null) return undefined
  const id = (metadata as Record<string, unknown>)['user_id']
  if (typeof id !== 'string') return undefined
  let chars = 0
  for (const _ of id) if (++chars > MAX_USER_ID_CHARS) break
  if (chars > MAX_USER_ID_CHARS) {
    return anthropicErrors.invalidRequest(
      `metadata.user_id: String should have at most ${MAX_USER_ID_CHARS} characters`,
    )
  }
  if (EMAIL.test(id)) {
    return anthropicErrors.invalidRequest(
      'metadata.user_id: user_id appears to contain an email address. Please send a uuid or hash value instead.',
    )
  }
  return undefined
}
