import type { RequestHandler } from 'express'

/**
 * A middleware whose `res.end` finishes later, as express-session's does
 * whenever it saves the session (a new one, a modified one, `rolling`): it
 * sends all but the body's last byte at once and the rest, with the end,
 * once its store has answered — a moment later (`setImmediate`), when the
 * promise given resolves (a store answering at a time the test chooses), or,
 * for a store that never calls back (`never`), not at all.
 */
export function deferredEnd(
  store: 'answers' | 'never' | PromiseLike<unknown> = 'answers',
): RequestHandler {
  return (_req, res, next) => {
    const write = res.write as (chunk: Buffer) => boolean
    const end = res.end as (chunk: Buffer) => unknown
    res.end = function endAfterSave(this: typeof res, chunk?: unknown) {
      const body = Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(typeof chunk === 'string' ? chunk : '')
      if (!this.headersSent) this.setHeader('content-length', body.length)
      if (body.length > 1) write.call(this, body.subarray(0, -1))
      if (store === 'answers') setImmediate(() => end.call(this, body.subarray(-1)))
      else if (store !== 'never') void store.then(() => end.call(this, body.subarray(-1)))
      return this
    } as typeof res.end
    next()
  }
}
