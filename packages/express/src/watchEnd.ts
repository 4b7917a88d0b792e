import type { ServerResponse } from 'node:http'

/**
 * Whether `res.end` is called while `respond` runs. A middleware may end a
 * response later than its `end` is called — express-session, saving the
 * session, sends all but the body's last byte and ends it once its store
 * has answered — so `writableEnded` alone took respond's finished answer
 * for one left unended: the plain 504 was written over it, found it started
 * with a length, and destroyed the socket (no answer at all). An own `end`
 * for the call's length, put back as it was after.
 */
export function watchEnd(res: ServerResponse): { readonly called: boolean; stop(): void } {
  const own = Object.getOwnPropertyDescriptor(res, 'end')
  const end = res.end as (...args: unknown[]) => unknown
  const watch = {
    called: false,
    stop() {
      if (own === undefined) delete (res as { end?: unknown }).end
      else Object.defineProperty(res, 'end', own)
    },
  }
  ;(res as unknown as { end: (...args: unknown[]) => unknown }).end = function watchedEnd(
    this: unknown,
    ...args: unknown[]
  ) {
    // After the call: an `end` that threw ended nothing, and gets the plain 504.
    const result = end.apply(this, args)
    watch.called = true
    return result
  }
  return watch
}
