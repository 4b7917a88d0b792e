/** Credential fields, blanked wherever a record carries them (see `CREDENTIAL_PARENTS`). */
export const CREDENTIAL_FIELDS = ['authorization', 'apiKey', 'apiKeys', 'password'] as const

/** Header names that carry a credential, blanked in a `headers` object there too. */
export const CREDENTIAL_HEADERS = [
  'authorization',
  'cookie',
  'x-api-key',
  'api-key',
  'x-goog-api-key',
] as const

/** The objects a record may carry them in, beside its top level. */
export const CREDENTIAL_PARENTS = ['req', 'request', 'upstream', 'provider'] as const

/**
 * The record with the credential fields above replaced by `censor`: what
 * pino's `redact` does with the same paths (`REDACT_PATHS`), done here for a
 * pino logger of the app's. Given to that logger as a child's `redact`, the
 * paths replaced the app's own (pino keeps one redaction per logger, and a
 * child's option overrides its parent's): a line through the gateway
 * dropped the app's `redact` — its paths, its censor, its `remove` —
 * whatever it said.
 *
 * Copies only what it changes (the objects on the way to a blanked field):
 * a record's nested objects may be the caller's own.
 */
export function blankCredentials(
  record: Record<string, unknown>,
  censor: string,
): Record<string, unknown> {
  let out = blanked(record, censor)
  for (const parent of CREDENTIAL_PARENTS) {
    const inner = out[parent]
    if (!isObject(inner)) continue
    const inside = blanked(inner, censor)
    if (inside === inner) continue
    if (out === record) out = { ...record }
    out[parent] = inside
  }
  return out
}

/** One level: its credential fields and its `headers`' credential headers; itself when it has none. */
function blanked(value: Record<string, unknown>, censor: string): Record<string, unknown> {
  let out = value
  for (const field of CREDENTIAL_FIELDS) {
    if (value[field] === undefined) continue
    if (out === value) out = { ...value }
    out[field] = censor
  }
  const headers = value['headers']
  if (!isObject(headers)) return out
  let copied: Record<string, unknown> | undefined
  for (const name of CREDENTIAL_HEADERS) {
    if (headers[name] === undefined) continue
    copied ??= { ...headers }
    copied[name] = censor
  }
  if (copied === undefined) return out
  if (out === value) out = { ...value }
  out['headers'] = copied
  return out
}

/** An object walked into: not an array, and not one serialised as something else (`toJSON`). */
function isObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { toJSON?: unknown }).toJSON !== 'function'
  )
}
