import { type Deadline, defineChannel, defineChannels } from '@hourglass/core'
import { withoutQuery } from './errors/withoutQuery.js'
import { withoutPathParams } from './withoutPathParams.js'

/** `hourglass:egress:attempt`. URLs carry origin and path only (no query, no path parameters: they may hold secrets). */
export interface EgressAttemptMessage {
  /**
   * An opaque object, the same in this attempt's `attempt-end` message: match
   * the two by it (identical attempts — one URL fetched twice at once — are
   * otherwise indistinguishable).
   */
  handle: object
  deadline: Deadline | undefined
  /** The method sent: a redirect hop's own (a POST redirected with 303 goes on as a GET). */
  method: string
  url: string
  /** 1 for the first attempt; a redirect hop keeps its attempt's number. */
  attempt: number
  /**
   * Set on a hop `createFetch` sent to follow a redirect within this attempt:
   * 1 for the first redirect's target, 2 for the next… (`url` is that
   * hop's). Undefined for the request the attempt began with.
   */
  redirect?: number | undefined
  /** What was left when the attempt started (Infinity without a deadline). */
  remainingMs: number
  /** The `x-deadline-remaining-ms` value written, if any. */
  headerMs: number | undefined
  /**
   * Set on a retry (attempt 2 and on, not a redirect hop): the failure code
   * that justified it, as its `retry` event said. A retry is made when it is
   * sent: one announced and then abandoned ends in a `retry-skipped` instead.
   */
  retryReason?: string | undefined
}

/** `hourglass:egress:attempt-end`. */
export interface EgressAttemptEndMessage {
  /** The same object as in this attempt's `attempt` message. */
  handle: object
  deadline: Deadline | undefined
  method: string
  url: string
  attempt: number
  /** As in this attempt's `attempt` message: the redirect this hop followed, if any. */
  redirect?: number | undefined
  elapsedMs: number
  statusCode?: number | undefined
  /** The failure's stable code (`CONNECT_TIMEOUT`, `DEADLINE_EXCEEDED`, …) when the attempt failed. */
  errorCode?: string | undefined
  /** Which phase failed: `dns`, `connect`, `headers`, `body`. */
  phase?: string | undefined
  bytesReceived: number
  /**
   * `'caller'` when the attempt ended because the caller stopped it: it
   * cancelled (or destroyed) the response body it was handed, or aborted its
   * signal — whatever reason it gave, so `errorCode` (`AbortError`, or its
   * reason's own class or code) tells no failure apart from a choice to stop.
   * Undefined for an attempt that ended on its own, or failed.
   */
  stoppedBy?: 'caller' | undefined
  /**
   * `true` when the answer was a 504 with `x-deadline-expired: 1`: the
   * upstream (an Hourglass hop) says its own deadline ran out. Told whatever
   * the call's `retry` options (`retry-skipped`, whose `why` says
   * `upstream-deadline` too, is published only when the call may retry:
   * never under `retry: false`, so never for llm's model attempts).
   */
  upstreamDeadline?: true | undefined
  /**
   * On a 301, 302, 303, 307 or 308 of `createFetch`: `true` when fetch
   * follows it (this hop is not the call's answer, its target is), `false`
   * when the caller gets it as its answer (`redirect: 'manual'`, or no
   * `Location`). Undefined for any other status, and through the
   * interceptor alone.
   */
  followed?: boolean | undefined
}

/** `hourglass:egress:retry`. */
export interface EgressRetryMessage {
  deadline: Deadline | undefined
  method: string
  url: string
  /** The attempt that is about to start (2 for the first retry). */
  attempt: number
  /** The failure code that justified the retry. */
  reason: string
  delayMs: number
}

/** `hourglass:egress:retry-skipped`. */
export interface EgressRetrySkippedMessage {
  deadline: Deadline | undefined
  method: string
  url: string
  attempt: number
  reason: string
  /** Why no retry: e.g. `no-budget`, `after-first-byte`, `not-idempotent`, `upstream-deadline`, `not-retryable`, `already-retried`. */
  why: string
}

/**
 * The diagnostics channels @hourglass/fetch publishes on, from `createFetch`
 * and `deadlineInterceptor` alike. Messages are built only while somebody
 * subscribes.
 */
export const fetchChannels = defineChannels('fetch', {
  /** One outbound attempt begins. */
  attempt: defineChannel<EgressAttemptMessage>('hourglass:egress:attempt'),
  /** One outbound attempt ended (ok or failed), after its body ended. */
  attemptEnd: defineChannel<EgressAttemptEndMessage>('hourglass:egress:attempt-end'),
  /** A failed attempt will be retried. */
  retry: defineChannel<EgressRetryMessage>('hourglass:egress:retry'),
  /** A failed attempt will not be retried, and why. */
  retrySkipped: defineChannel<EgressRetrySkippedMessage>('hourglass:egress:retry-skipped'),
})

declare module '@hourglass/core' {
  interface ChannelGroups {
    fetch: typeof fetchChannels
  }
}

// The names the sending code calls them by.
export const publishAttempt = fetchChannels.attempt.publish
export const publishAttemptEnd = fetchChannels.attemptEnd.publish
export const publishRetry = fetchChannels.retry.publish
export const publishRetrySkipped = fetchChannels.retrySkipped.publish

/**
 * Origin and path only: a query string may carry secrets, and so may a
 * path segment's parameters (`;jsessionid=…`: `withoutPathParams`). Read
 * only when an event is published.
 */
export function eventUrl(origin: string, path: string): string {
  const q = path.indexOf('?')
  const bare = q === -1 ? path : path.slice(0, q)
  return origin + (bare.indexOf(';') === -1 ? bare : withoutPathParams(bare))
}

/**
 * A parsed URL as events and messages show it: origin and path. A scheme
 * other than HTTP(S) (`blob:`, `file:`, `data:`; fetch's refusals) has no
 * origin worth the name — Node's `blob:nodedata:…` has `null`, read as
 * `nullnodedata:…`, and `blob:https://host/…` the origin of the page that
 * made it, read as an HTTP URL — so it is its scheme, host if any and path
 * (`withoutQuery`); a `data:` URL its scheme alone (the rest is its payload,
 * of any size).
 */
export function parsedEventUrl(url: URL): string {
  const scheme = url.protocol
  if (scheme === 'http:' || scheme === 'https:') return eventUrl(url.origin, url.pathname)
  // Cut as a refused redirect's Location is: path parameters too, and the
  // credentials of a URL inside an opaque path (`blob:https://u:pw@host/…`).
  return withoutQuery(url.href)
}

/**
 * Origin and path of an undici dispatch, for events: `origin` as undici
 * takes it (a `URL`, or a string that may end in `/` — used as it was, the
 * URL read `http://host:port//path`).
 */
export function dispatchEventUrl(origin: unknown, path: string): string {
  return eventUrl(originOf(origin), path)
}

/** The whole URL of an undici dispatch (query included): not for events. */
export function dispatchUrl(origin: unknown, path: string): string {
  return originOf(origin) + path
}

/** The origin alone (scheme, host, port). */
function originOf(origin: unknown): string {
  if (origin instanceof URL) return origin.origin
  const text = String(origin ?? '')
  try {
    return new URL(text).origin
  } catch {
    return text
  }
}
