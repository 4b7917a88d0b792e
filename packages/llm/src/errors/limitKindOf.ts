import { errorKindTraits } from './errorKinds.js'

/** A provider's limit: a rate limit (of a model on a key) or an overload (of the provider). */
export type LimitKind = 'rate_limited' | 'overloaded'

/**
 * Whether a failure is the provider limiting, and which limit: the one test
 * of "rate limit or overload" that the dialects' normalisers, the retry
 * decision (the overload rules, the earliest-answer fallback), the retry
 * delay and admission (its verdict, the cooldown's scope and length) all
 * use, so they cannot disagree. They did: admission counted any 503 as an
 * overload and cooled the whole provider for 5–10 s, while the retry path
 * read only the label and planned a 1 s backoff on OpenAI's 503 "The engine
 * is currently overloaded" (`type: server_error`) — a retry admission then
 * held back, so the call waited instead of falling back at once.
 *
 * The kind first: `rate_limited` and `overloaded` are limits whatever the
 * status. A kind that says nothing about the limit (`server_error`,
 * `timeout`, `network`: `limit: 'unknown'` in the table; an unknown string
 * counts as a server error) leaves the status to speak: 429 is a rate limit,
 * 503 and 529 an overload. A kind that says something else — the request
 * refused (bad request, policy, context), the key rejected or out of quota,
 * no such model — keeps its meaning on any status: it is no limit.
 */
export function limitKindOf(error: {
  readonly kind: string
  readonly status?: number | undefined
}): LimitKind | undefined {
  const { kind, status } = error
  if (kind === 'rate_limited' || kind === 'overloaded') return kind
  if (status !== 429 && status !== 503 && status !== 529) return undefined
  if (errorKindTraits(kind).limit !== 'unknown') return undefined
  return status === 429 ? 'rate_limited' : 'overloaded'
}
