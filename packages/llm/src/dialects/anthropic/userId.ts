import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'

/**
 * The longest `metadata.user_id` Anthropic takes: its API reference gives
 * the field `maxLength 256`, and a longer one is its 400.
 */
const MAX_USER_ID_CHARS = 256

/**
 * An email address anywhere in the id. Anthropic answers 400 to one
 * ("metadata.user_id: user_id appears to contain an email address. Please
 * send a uuid or hash value", BerriAI/litellm #10106): the field is for "a
 * uuid, hash value, or other opaque identifier" (docs.claude.com, Messages
 * API). A local part, an `@`, and a domain with a dot: `@alice` and
 * `org@1234` are not one.
 */
const EMAIL = /[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+/

/**
 * Anthropic keeps one end-user id (`metadata.user_id`); OpenAI has two fields
 * for it (`user`, being replaced by `safety_identifier`). Either goes; both
 * go when they agree; two different ids throw rather than one being lost.
 * An id Anthropic answers 400 — more than 256 characters, or an email
 * address, both of which OpenAI takes (its docs ask for a hash of the
 * email) — throws naming the field that set it: a 400 goes to no fallback,
 * and its message named `metadata.user_id`, a field the client never sent.
 * Not hashed here: the id would no longer be the one the client chose, nor
 * match what its other requests sent.
 */
export function anthropicUserId(
  user: string | undefined,
  safetyIdentifier: string | undefined,
): string | undefined {
  if (user !== undefined && safetyIdentifier !== undefined && user !== safetyIdentifier) {
    throw new InvalidChatRequestError(
      'user',
      'Anthropic keeps one end-user id (metadata.user_id), and safety_identifier is set to another; send one of them',
    )
  }
  const field = user !== undefined ? 'user' : 'safety_identifier'
  const id = user ?? safetyIdentifier
  if (id === undefined) return undefined
  // In characters, as Anthropic counts them, not UTF-16 units.
  let chars = 0
  for (const _ of id) if (++chars > MAX_USER_ID_CHARS) break
  if (chars > MAX_USER_ID_CHARS) {
    throw new InvalidChatRequestError(
      field,
      `Anthropic takes an end-user id of at most ${MAX_USER_ID_CHARS} characters, got ${[...id].length}: send a hash of it`,
      PROVIDER_REFUSES_VALUE,
    )
  }
  if (EMAIL.test(id)) {
    throw new InvalidChatRequestError(
      field,
      'Anthropic refuses an end-user id that holds an email address: send a hash of it, or a UUID',
      PROVIDER_REFUSES_VALUE,
    )
  }
  return id
}
