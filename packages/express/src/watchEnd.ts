import type { ServerResponse } from 'node:http'
import { replaceOwn } from './replaceOwn.js'

/**
 * How long, on the deadline's clock, a response whose `end` `respond`
 * called may take to finish once `respond` has returned, in ms. A
 * middleware may complete an end later (express-session sends the last
 * byte once its store has answered): that answer is kept. A store that
 * never answers would hold the socket and the buffered answer for good, the
 * request never ended: past this grace the response is destroyed, and the
 * request ends `expired`. A second is far beyond a session store's write
 * and short next to a connection's keep-alive. The same grace bounds the
 * end the deadline gives a started stream (see `IngressRequest#answer`).
 */
export const RESPOND_END_GRACE_MS = 1000

export interface EndWatch {
  /** `end` was called (and returned) while watched. */
  readonly called: boolean
  /** Put `end` back as it was. */
  stop(): void
}

const unwatched: EndWatch = { called: false, stop() {} }

/**
 * Whether `res.end` is called while `respond` runs. A middleware may end a
 * response later than its `end` is called — express-session, saving the
 * session, sends all but the body's last byte and ends it once its store
 * has answered — so `writableEnded` alone took respond's finished answer
 * for one left unended: the plain 504 was written over it, found it started
 * with a length, and destroyed the socket (no answer at all). An own `end`
 * for the call's length, put back as it was after.
 *
 * Defined, not assigned: an instrumentation may have pinned `end` (not
 * writable), and the assignment threw in the deadline's expiry, before
 * `respond` ran — the request got no answer at all. Where `end` cannot be
 * replaced (not configurable), nothing is watched: `writableEnded` alone
 * judges respond's answer.
 */
export function watchEnd(res: ServerResponse): EndWatch {
  const own = Object.getOwnPropertyDescriptor(res, 'end')
  const end = res.end as (...args: unknown[]) => unknown
  const watch = {
    called: false,
    stop() {
      if (own === undefined) delete (res as { end?: unknown }).end
      else Object.defineProperty(res, 'end', own)
    },
  }
  function watchedEnd(this: unknown, ...args: unknown[]): unknown {
    // After the call: an `end` that threw ended nothing, and gets the plain 504.
    const result = end.apply(this, args)
    watch.called = true
    return result
  }
  return replaceOwn(res, 'end', watchedEnd) ? watch : unwatched
}
