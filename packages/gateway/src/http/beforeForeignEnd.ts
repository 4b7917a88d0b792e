import type { Response } from 'express'

/**
 * Runs `before` when something other than the handler ends `res` — the
 * ingress middleware's backstop, ending a started stream at its deadline —
 * just before that end, while the response can still be written. Returns
 * the release: call it before the handler's own end (and once the response
 * is over); from then on the wrapper only passes the call on.
 *
 * An own property over `res.end`, defined rather than assigned, as
 * @hourglass/express wraps a response's writers: an instrumentation may
 * have pinned the writer, and then there is no wrapper (an assignment threw).
 * Left in place when released: the backstop may have wrapped it in turn.
 */
export function beforeForeignEnd(res: Response, before: () => void): () => void {
  let live = true
  const end = res.end
  const wrapper = function (this: unknown, ...args: unknown[]) {
    if (live) {
      live = false
      before()
    }
    return (end as (...a: unknown[]) => unknown).apply(this, args)
  }
  try {
    Object.defineProperty(res, 'end', {
      value: wrapper,
      writable: true,
      configurable: true,
      enumerable: Object.getOwnPropertyDescriptor(res, 'end')?.enumerable ?? true,
    })
  } catch {
    // Pinned for good: the end goes out as it is.
  }
  return () => {
    live = false
  }
}
