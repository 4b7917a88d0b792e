import type { ServerResponse } from 'node:http'
import { replaceOwn } from './replaceOwn.js'

export interface MiddlewareEnd {
  /** The handler's `end` reached the middleware's (and returned). */
  readonly called: boolean
}

/**
 * Whether the handler has ended a response whose `end` a middleware ahead
 * of `deadline()` replaced, and which that middleware completes later.
 * `compression` ends its zlib stream and calls Node's `end` only once the
 * last compressed byte has been written, so `writableEnded` stays false for
 * as long as the client takes to read it (zlib waits for the socket to
 * drain); express-session ends once its store has answered. Judged by
 * `writableEnded` alone, an answer the handler ended in time was taken at
 * the deadline for a started stream: ended again (a no-op), reported
 * `expired`, and destroyed when its client read slowly — measured: a 32 MB
 * JSON answered at once under a 300 ms budget, its client cut after 5.4 MB
 * of gzip ("aborted") where the uncompressed answer arrived whole.
 *
 * Only where the response already has an own `end` when `deadline()` runs
 * (a middleware mounted ahead wrapped it): nothing is added to any other
 * response. Undefined when there is none, or it cannot be replaced (an
 * instrumentation pinned it): `writableEnded` alone judges then.
 */
export function watchMiddlewareEnd(res: ServerResponse): MiddlewareEnd | undefined {
  if (!Object.hasOwn(res, 'end')) return undefined
  const end = res.end as (...args: unknown[]) => unknown
  const watch = { called: false }
  function endSeen(this: unknown, ...args: unknown[]): unknown {
    // After the call: an `end` that threw ended nothing.
    const result = end.apply(this, args)
    watch.called = true
    return result
  }
  return replaceOwn(res, 'end', endSeen) ? watch : undefined
}
