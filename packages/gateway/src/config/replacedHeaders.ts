import { KNOWN_DEADLINE_SOURCES } from '@hourglass/core'
import { dialects } from '../llm.js'

/**
 * Headers llm's adapter writes on every request with its own value, over
 * the configured extra headers (its `headers` option says so; the values
 * are createAdapter.ts's `prepare`, which exports none of them), each with
 * the value it writes, compared in any letter case (a media type, a
 * content coding: HTTP compares them so). `undefined` where the value is
 * not the same on every request — `accept` (`application/json` unstreamed,
 * `text/event-stream` streamed), the call's idempotency key (one per call,
 * the same on each of its attempts) —, so that any configured value is
 * replaced on some request.
 */
const ADAPTER_HEADERS: Readonly<Record<string, string | undefined>> = {
  'content-type': 'application/json',
  accept: undefined,
  'accept-encoding': 'identity',
  'idempotency-key': undefined,
}

/**
 * Every call runs under a deadline, and @hourglass/fetch (`withDeadlineHeader`)
 * drops each of these from an attempt's headers under one, in any letter
 * case, writing what is left of the call's own in `x-deadline-remaining-ms`
 * (and `grpc-timeout`, where one was given).
 */
const DEADLINE_HEADERS: readonly string[] = KNOWN_DEADLINE_SOURCES

/** The smallest request a dialect builds: only the headers it adds are read. */
const PROBE = { messages: [{ role: 'user' as const, content: 'x' }], maxTokens: 1 }

/** One configured header that would never be sent, by its name as written. */
export interface ReplacedHeader {
  header: string
  message: string
}

/**
 * Every one of a provider's configured `headers` that would never be sent:
 * one the adapter writes itself on every request, or a header the
 * dialect's request carries (Anthropic's `anthropic-version`), set to
 * another value than the one written in its place (the same value is sent
 * as configured: Anthropic's documented curl headers, copied, were refused
 * though what went out was the same); a deadline header, whatever its
 * value; or, beside `apiKeys`, the dialect's key header (`Authorization`,
 * `x-api-key`, `x-goog-api-key`), which the key from `apiKeys` replaces.
 * Accepted, such a header was dropped without a word: an `Authorization`
 * for a proxy in front of the provider went out as `Bearer <key>`, the
 * proxy answered 401, and the keys were retired. With no `apiKeys` the key
 * header is the credential, and is sent.
 *
 * Called by the config schema on a provider entry that may be partly
 * invalid (so that these are reported with its other problems), hence the
 * `unknown`s: an unknown dialect leaves only the adapter's own headers.
 */
export function replacedHeaders(provider: {
  dialect?: unknown
  apiKeys?: unknown
  headers?: unknown
}): ReplacedHeader[] {
  const { dialect, apiKeys, headers } = provider
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return []
  const names = Object.keys(headers)
  if (names.length === 0) return []
  const known = typeof dialect === 'string' && Object.hasOwn(dialects, dialect)
  const keyHeaders = known ? lowerCased(dialects[dialect as DialectName].authHeaders('<key>')) : {}
  const own = known ? dialectHeaders(dialect as DialectName) : {}
  // Keys that fail their own checks are still keys the operator meant to
  // send: a lone key where the list belongs (`"sk-…"`, `{ "env": … }`) too.
  const withKeys = Array.isArray(apiKeys)
    ? apiKeys.length > 0
    : apiKeys !== undefined && apiKeys !== null && apiKeys !== ''
  const found: ReplacedHeader[] = []
  for (const header of names) {
    const lower = header.toLowerCase()
    const value: unknown = (headers as Record<string, unknown>)[header]
    const key = Object.hasOwn(keyHeaders, lower) ? keyHeaders[lower] : undefined
    if (key !== undefined && withKeys) {
      found.push({
        header,
        message: `cannot be set beside apiKeys: each request carries the key from apiKeys in it (${header}: ${key}), which replaces this value, so it would never be sent; put the credential in apiKeys, or leave apiKeys empty to send this header`,
      })
    } else if (DEADLINE_HEADERS.includes(lower)) {
      found.push({
        header,
        message:
          'cannot be set: a deadline header, and every call carries its own deadline: the gateway drops any deadline header from each attempt and writes what is left of the call’s in x-deadline-remaining-ms (and in grpc-timeout, in its format, where one was given), so this value would never be sent',
      })
    } else if (Object.hasOwn(ADAPTER_HEADERS, lower)) {
      const sent = ADAPTER_HEADERS[lower]
      if (sent === undefined) {
        found.push({
          header,
          message:
            'cannot be set: the adapter sends its own on every request, which replaces this value, so it would never be sent',
        })
      } else if (differs(value, sent, true)) {
        found.push({
          header,
          message: `cannot be set to another value: the adapter sends its own on every request (${header}: ${sent}), which replaces this value, so it would never be sent`,
        })
      }
    } else if (Object.hasOwn(own, lower) && differs(value, own[lower] as string, false)) {
      found.push({
        header,
        message: `cannot be set to another value: the ${String(dialect)} dialect sends its own (${header}: ${own[lower]}), which replaces this value, so it would never be sent`,
      })
    }
  }
  return found
}

/**
 * True when `value` is what the adapter, or the dialect, sends in `header`
 * on every request anyway (`content-type: application/json` in any letter
 * case, Anthropic's `anthropic-version: 2023-06-01`): a value the config
 * takes because it changes nothing — the same rule as the check above, so
 * what is taken and what is said to be no secret cannot drift apart.
 */
export function sentAnyway(dialect: string, header: string, value: string): boolean {
  const lower = header.toLowerCase()
  if (Object.hasOwn(ADAPTER_HEADERS, lower)) {
    const sent = ADAPTER_HEADERS[lower]
    return sent !== undefined && !differs(value, sent, true)
  }
  if (!Object.hasOwn(dialects, dialect)) return false
  const own = dialectHeaders(dialect as DialectName)
  return Object.hasOwn(own, lower) && !differs(value, own[lower] as string, false)
}

/**
 * A configured value that is not the one sent in its place: replacing it
 * changes what goes out. Only a string is known: one not (yet) read from
 * its `{ env }` (the variable unset, reported at the field already) is not
 * said to differ, since the same value may be what it will hold.
 */
function differs(value: unknown, sent: string, anyCase: boolean): boolean {
  if (typeof value !== 'string') return false
  return anyCase ? value.toLowerCase() !== sent : value !== sent
}

type DialectName = keyof typeof dialects

/** The headers a dialect's request builder adds, names lower case. */
function dialectHeaders(dialect: DialectName): Record<string, string> {
  return lowerCased(dialects[dialect].buildRequest(PROBE, 'model').headers ?? {})
}

function lowerCased(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [header, value] of Object.entries(headers)) out[header.toLowerCase()] = value
  return out
}
