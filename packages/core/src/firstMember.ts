import { trimOws } from './trimOws.js'

/**
 * The first member of a token or number field, without HTTP's optional
 * whitespace (space, tab) around it: a field sent twice — a proxy adding
 * its own copy — reaches a reader joined (`100, 100`), as fetch's `Headers`
 * and Node join it, and its first member counts, as for `Retry-After`
 * (`retryAfterMs`) and as openai-node reads `retry-after-ms`. Not for a
 * field whose value may hold a comma of its own (an HTTP-date).
 */
export function firstMember(value: string): string {
  const comma = value.indexOf(',')
  return trimOws(comma === -1 ? value : value.slice(0, comma))
}
