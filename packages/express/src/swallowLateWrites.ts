import type { ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'

// Node's own writers and Express's (4 and 5) helpers: anything that would
// write, or throw "Cannot set headers after they are sent", once answered.
// `get`/`getHeader` stay: reading is harmless. `destroy` goes too: stream.pipeline
// destroys every stream in it when one fails — `res` included, a tick after
// our 504 when the deadline's signal aborted its upstream — and a destroyed
// response destroys its socket: the keep-alive connection the 504 went out
// on, and the requests queued behind it. (writeExpired's own destroy of a
// cut-short fixed-length response comes before this.)
const WRITERS = [
  'write',
  'end',
  'writeHead',
  'setHeader',
  'setHeaders',
  'appendHeader',
  'removeHeader',
  'flushHeaders',
  'addTrailers',
  'writeContinue',
  'writeEarlyHints',
  'status',
  'links',
  'send',
  'json',
  'jsonp',
  'sendStatus',
  'sendFile',
  'sendfile',
  'download',
  'type',
  'contentType',
  'format',
  'attachment',
  'append',
  'header',
  'set',
  'clearCookie',
  'cookie',
  'location',
  'redirect',
  'vary',
  'render',
  'destroy',
] as const

/**
 * After the deadline answered, turn every writer on this one response into a
 * no-op that reports the call: the handler still running gets no "Cannot set
 * headers after they are sent", no "write after end" error event, and its
 * chained calls (`res.status(200).json(…)`) keep working on nothing.
 *
 * The wrappers are own properties of this response object and are never
 * removed: late writes by definition come after the response finished, and
 * they die with the response (nothing is registered anywhere else).
 *
 * A trailing callback (`write(chunk, cb)`, `sendFile(path, cb)`) is called on
 * the next tick with `reason`, as Node does for a write after end, so code
 * awaiting it moves on instead of hanging.
 */
export function swallowLateWrites(
  res: ServerResponse,
  reason: unknown,
  report: (method: string) => void,
): void {
  const target = res as unknown as Record<string, unknown>
  for (const method of WRITERS) {
    if (typeof target[method] !== 'function') continue
    target[method] = function swallowed(...args: unknown[]): unknown {
      report(method)
      const last = args.at(-1)
      if (typeof last === 'function') process.nextTick(last as (error: unknown) => void, reason)
      return method === 'write' ? true : res
    }
  }
  // A stream piped in from now on: `pipe()` announces itself with this
  // event. Caught on `emit`, not with a 'pipe' listener, so the response
  // keeps the listeners it started with.
  const emit = res.emit
  target.emit = function emitting(
    this: ServerResponse,
    event: string | symbol,
    ...args: unknown[]
  ): boolean {
    if (event === 'pipe') {
      report('pipe')
      stopLatePipe(res, args[0] as Readable | undefined, reason)
    }
    return emit.call(this, event, ...args)
  }
}

/**
 * Every chunk piped into the answered response would be swallowed, and a
 * swallowed `write` says "go on": the source would be read to its end for
 * nobody, one late-write report per chunk — forever if it is endless, and in
 * one synchronous loop that blocks the event loop if it pushes as it is read.
 * So it is unpiped at once, and:
 * - the request's own body (`req.pipe(res)`) is left to flow into nothing,
 *   as Node drops a body nobody reads: destroying it would take the
 *   keep-alive connection down;
 * - a source something else reads (a stream fanned out to several
 *   responses) goes on for them;
 * - any other was read for this response alone: it is destroyed, as the
 *   deadline's signal given to `pipeline` would have done — with the
 *   deadline's error where someone listens for one (`pipeline` does, and
 *   rejects with it), without where nobody does (an 'error' event nobody
 *   listens to is an uncaught exception).
 */
function stopLatePipe(res: ServerResponse, source: Readable | undefined, reason: unknown): void {
  if (typeof source?.unpipe !== 'function') return
  source.unpipe(res)
  if (source === res.req || source.listenerCount('data') > 0) return
  source.destroy(source.listenerCount('error') > 0 ? (reason as Error) : undefined)
}
