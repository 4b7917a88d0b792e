import type { ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import { isHttp2 } from './isHttp2.js'
import { replaceOwn } from './replaceOwn.js'

// Node's own writers and Express's (4 and 5) helpers: anything that would
// write, or throw "Cannot set headers after they are sent", once answered.
// `get`/`getHeader` stay: reading is harmless. `destroy` goes too: stream.pipeline
// destroys every stream in it when one fails — `res` included, a tick after
// our 504 when the deadline's signal aborted its upstream — and a destroyed
// response destroys its socket: the keep-alive connection the 504 went out
// on, and the requests queued behind it. (writeExpired's own destroy of a
// cut-short fixed-length response comes before this.) `writeProcessing`
// (and `writeContinue`, `writeEarlyHints`) write their interim head straight
// to the socket while the 504 is still its message: a `102 Processing` a
// handler sends to keep a slow answer alive landed after the 504, as the
// start of a response nobody asked for, and the client closed the connection.
// `writeHeader` is Node's old name for `writeHead` (the same function, still
// on every response): older code calls it from an `fs.readFile` callback, and
// after the 504 it threw "Cannot write headers after they are sent" there,
// an uncaught exception that took the process down.
const WRITERS = [
  'write',
  'end',
  'writeHead',
  'writeHeader',
  'setHeader',
  'setHeaders',
  'appendHeader',
  'removeHeader',
  'flushHeaders',
  'addTrailers',
  'writeContinue',
  'writeEarlyHints',
  'writeProcessing',
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

interface Over {
  /** Why the response is over early: what a stopped source is destroyed with, and a late callback gets. */
  reason: unknown
  /** Set once the deadline answered: every writer is swallowed and reported through it. */
  report: ((method: string) => void) | undefined
  /** The writers are wrapped on the response (once the deadline answered). */
  writers: boolean
}

/** The responses over before their handler ended them (answered by the deadline, or gone). */
const over = new WeakMap<object, Over>()

type Method = (this: unknown, ...args: unknown[]) => unknown
type Emit = (this: unknown, event: string | symbol, ...args: unknown[]) => boolean

// A key added and deleted again: it turns the response's properties into a
// dictionary (see `wrapWriters`).
const SLOW_PROPERTIES = Symbol('@hourglass/express.slowProperties')

/**
 * Wrap every writer on the response itself (own properties), over whatever
 * it finds there: the app's method, or a middleware's wrapper (as
 * `compression` and `on-headers` install). Own properties, not a prototype
 * put above the response's: Express sets the response's prototype when a
 * sub-app (`app.use('/v1', express())`) is entered and again when it is
 * left, and with it a prototype of ours would be gone — its
 * `res.status(200).json()` threw "Cannot set headers after they are sent".
 * A response whose prototype Express set has a hidden class of its own,
 * copied on each property added (34 of them: ~85 µs); the first key
 * deleted turns its properties into a dictionary, where each is an insert
 * (~9 µs in all). Paid once per response the deadline answered; a response
 * that ends normally never gets here.
 */
function wrapWriters(res: ServerResponse): void {
  const target = res as unknown as Record<PropertyKey, unknown>
  target[SLOW_PROPERTIES] = true
  delete target[SLOW_PROPERTIES]
  for (const method of WRITERS) {
    const current = target[method]
    if (typeof current === 'function')
      replaceOwn(target, method, swallowed(method, current as Method))
  }
  keepSent(res, 'statusCode')
  // HTTP/2 sends no reason phrase (and warns on any use of one): nothing to keep.
  if (!isHttp2(res)) keepSent(res, 'statusMessage')
}

/**
 * What a handler assigns rather than calls (`res.statusCode = 500` in a
 * catch block or an abort listener). The assignment reached nothing on the
 * wire, but everything that reads the status at the response's end — our
 * end event, a request logger, an HTTP span — reported a 500 that was never
 * sent. Kept at what went out, the assignment reported as a late write —
 * unless it assigns what went out (a handler's own timeout path setting
 * `504`): that changes nothing, and is no late write.
 */
const ASSIGNED = ['statusCode', 'statusMessage'] as const

function keepSent(res: ServerResponse, name: (typeof ASSIGNED)[number]): void {
  const sent: unknown = res[name]
  Object.defineProperty(res, name, {
    configurable: true,
    enumerable: true,
    get: () => sent,
    set: (value: unknown) => {
      if (value !== sent) over.get(res)?.report?.(name)
    },
  })
}

/** `method` for an answered response; `original` for anything else it is called on. */
function swallowed(method: string, original: Method) {
  return function swallowedWrite(this: unknown, ...args: unknown[]): unknown {
    const state = over.get(this as object)
    if (state?.report === undefined) return original.apply(this, args)
    if (!isExpressLabel(method, args)) state.report(method)
    const last = args.at(-1)
    if (typeof last === 'function') process.nextTick(last as (error: unknown) => void, state.reason)
    return method === 'write' ? true : this
  }
}

/**
 * Express's own `res.setHeader('X-Powered-By', 'Express')`, made as a request
 * enters an app: Express 5 in `app.handle`, Express 4 in the app's `init`
 * middleware — for a sub-app (`app.use('/api', express())`) too, each time a
 * request is routed into it. One the deadline answered on its way there
 * had it reported as the handler's late write, though no handler wrote
 * anything: Express was routing. Swallowed all the same (the response is
 * over), just not reported. Told apart by its exact arguments, as Express
 * spells them: the call comes from Express's code alone, nothing else on
 * the response marks it, and reading the caller's stack on every swallowed
 * write is too slow and too fragile. A handler's own call with those exact
 * arguments goes unreported too — it would change nothing a client sees;
 * any other spelling or value, and `res.set(…)`, still is reported.
 */
function isExpressLabel(method: string, args: unknown[]): boolean {
  return (
    method === 'setHeader' &&
    args.length === 2 &&
    args[0] === 'X-Powered-By' &&
    args[1] === 'Express'
  )
}

/**
 * The streams going in and out of a response that is over: `pipe()`
 * announces a source with 'pipe', and Node's `unpipe()` (called by the
 * pipe itself when the response finishes, closes or fails) with 'unpipe'.
 * Caught on `emit` (an own property of this response, so a sub-app's
 * prototype reset keeps it), not with listeners, so the response keeps the
 * listeners it started with.
 */
function emitting(emit: Emit) {
  return function emitOnOver(this: unknown, event: string | symbol, ...args: unknown[]): boolean {
    const state = event === 'pipe' || event === 'unpipe' ? over.get(this as object) : undefined
    if (state === undefined) return emit.call(this, event, ...args)
    const source = args[0] as Readable | undefined
    if (event === 'pipe') {
      state.report?.('pipe')
      // Piped into a response that is over: taken off it at once (which
      // comes back here as 'unpipe'), before a chunk is read for nobody.
      if (typeof source?.unpipe === 'function') source.unpipe(this as ServerResponse)
      return emit.call(this, event, ...args)
    }
    // The pipe's own 'unpipe' listener takes its 'data' listener off the
    // source first: what is left on the source then is read by others.
    const result = emit.call(this, event, ...args)
    stopUnpiped(this as ServerResponse, state, source)
    return result
  }
}

/** Mark `res` over and catch its streams on `emit`, once. */
function overState(res: ServerResponse, reason: unknown): Over {
  let state = over.get(res)
  if (state === undefined) {
    state = { reason, report: undefined, writers: false }
    over.set(res, state)
    const target = res as unknown as Record<string, unknown>
    target.emit = emitting(target.emit as Emit)
  }
  return state
}

/**
 * After the deadline answered, turn every writer on this one response into a
 * no-op that reports the call: the handler still running gets no "Cannot set
 * headers after they are sent", no "write after end" error event, and its
 * chained calls (`res.status(200).json(…)`) keep working on nothing — in a
 * sub-app entered afterwards too (see `wrapWriters`). Every source piped
 * into it is stopped (see `stopPipedSources`).
 *
 * Nothing is ever put back: late writes by definition come after the
 * response finished, and the state dies with the response (nothing is
 * registered anywhere else).
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
  const state = overState(res, reason)
  if (state.writers) return
  state.writers = true
  state.reason = reason
  state.report = report
  wrapWriters(res)
}

/**
 * The response is over before its handler ended it (the deadline ended it,
 * the client left, or it was destroyed with an error): stop every source
 * piped into it. Node unpipes a pipe's source when its destination
 * finishes or closes, and pauses it — and leaves it open: a file stream
 * keeps its descriptor, an upstream body its socket, for a caller who is
 * not there. (`stream.pipeline` destroys its streams; a plain `pipe` does
 * not.) Each source is caught as Node unpipes it, and stopped as the
 * deadline's signal given to `pipeline` would have: see `stopUnpiped`. A
 * stream piped in from now on is unpiped at once and stopped the same way.
 *
 * Costs an own `emit` on the response (a few µs), on these paths only.
 */
export function stopPipedSources(res: ServerResponse, reason: unknown): void {
  overState(res, reason)
}

/**
 * A source Node just unpiped from a response that is over early:
 * - the request's own body (`req.pipe(res)`) is left to drain (read and
 *   dropped, as Node does with a body nobody reads): destroying it would
 *   take the keep-alive connection down;
 * - a source something else reads (a stream fanned out to several
 *   destinations) goes on for them;
 * - one that already ended or was destroyed needs nothing;
 * - any other was read for this response alone: it is destroyed, as the
 *   deadline's signal given to `pipeline` would have done — with the
 *   reason (the deadline's error, the client's leaving) where someone
 *   listens for an error (`pipeline` does, and rejects with it), without
 *   where nobody does. A destroy without an error does not promise that
 *   none is emitted: undici's response body turns it into its own
 *   `RequestAbortedError` and emits that, and an 'error' event nobody
 *   listens to is an uncaught exception — the host process went down for
 *   a caller who had left. So every source we destroy gets a listener that
 *   drops what our own destroy raises (see `dropError`);
 * - a stream that fed it (`body.pipe(gzip).pipe(res)`: the one unpiped
 *   here is the gzip) is unpiped from it as it closes, and stopped by the
 *   same rules, back to the first.
 */
function stopUnpiped(res: ServerResponse, state: Over, source: Readable | undefined): void {
  if (typeof source?.destroy !== 'function' || source.destroyed || source.readableEnded) return
  if (source === res.req) {
    // Unpiped, Node paused it: a body still arriving would then fill its
    // buffers and stop the socket, and the keep-alive connection with it.
    // Flowing to no listener, the rest is read and dropped.
    if (source.listenerCount('data') === 0 && source.listenerCount('readable') === 0) {
      source.resume()
    }
    return
  }
  if (source.listenerCount('data') > 0 || source.listenerCount('readable') > 0) return
  // A source fed by another (`body.pipe(gzip).pipe(res)`): as it closes,
  // Node unpipes and pauses the one feeding it, which, paused, would hold
  // its file or its upstream connection open: stopped by the same rules.
  source.on('unpipe', (upstream: Readable) => stopUnpiped(res, state, upstream))
  // Someone may listen for errors and not handle them: Node's own pipe
  // (this source piped from another) rethrows the error when it was the
  // only listener — the host process went down. So the listener that drops
  // what our destroy raises goes on every source; the reason still reaches
  // whoever listened (`pipeline` rejects with it).
  const heard = source.listenerCount('error') > 0
  source.on('error', dropError)
  source.destroy(heard ? (state.reason as Error) : undefined)
}

/**
 * The 'error' a source we destroy raises when nobody listens for one: the
 * error is our destroy's own doing, for a response nobody reads, and nobody
 * asked to hear of it. Not a `once`: a stream's teardown may emit more than
 * one, and the source is destroyed, so the listener stays with it and dies
 * with it. One function for every source, not a closure each.
 */
function dropError(): void {}
