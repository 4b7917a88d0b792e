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

/** The names a middleware may have wrapped as own properties of a response. */
const OWN_CHECKED: readonly string[] = [...WRITERS, 'emit']

interface Over {
  /** Why the response is over early: what a stopped source is destroyed with, and a late callback gets. */
  reason: unknown
  /** Set once the deadline answered: every writer is swallowed and reported through it. */
  report: ((method: string) => void) | undefined
}

/** The responses over before their handler ended them (answered by the deadline, or gone). */
const over = new WeakMap<object, Over>()

/**
 * One prototype per response prototype (per Express app): the writers it
 * has, each a no-op for an answered response, above the app's own, and an
 * `emit` that sees the streams piped in and out. Swapping a response's
 * prototype costs about 2 µs; adding 34 own properties to it cost about
 * 200 µs (a response whose prototype Express set has a map of its own,
 * copied on every property added) — paid on every 504. A response that ends
 * normally never gets it: nothing here runs on the success path.
 */
const overPrototypes = new WeakMap<object, object>()

function overPrototype(proto: object): object {
  let cached = overPrototypes.get(proto)
  if (cached === undefined) {
    const methods: PropertyDescriptorMap = {}
    const base = proto as Record<string, unknown>
    for (const method of WRITERS) {
      const original = base[method]
      if (typeof original === 'function') {
        methods[method] = {
          value: swallowed(method, original as Method),
          writable: true,
          configurable: true,
        }
      }
    }
    const emit = base.emit as Emit
    methods.emit = { value: emitting(emit), writable: true, configurable: true }
    cached = Object.create(proto, methods) as object
    overPrototypes.set(proto, cached)
  }
  return cached
}

type Method = (this: unknown, ...args: unknown[]) => unknown
type Emit = (this: unknown, event: string | symbol, ...args: unknown[]) => boolean

/** `method` for an answered response; `original` for anything else it is called on. */
function swallowed(method: string, original: Method) {
  return function swallowedWrite(this: unknown, ...args: unknown[]): unknown {
    const state = over.get(this as object)
    if (state?.report === undefined) return original.apply(this, args)
    state.report(method)
    const last = args.at(-1)
    if (typeof last === 'function') process.nextTick(last as (error: unknown) => void, state.reason)
    return method === 'write' ? true : this
  }
}

/**
 * The streams going in and out of a response that is over: `pipe()`
 * announces a source with 'pipe', and Node's `unpipe()` (called by the
 * pipe itself when the response finishes, closes or fails) with 'unpipe'.
 * Caught on `emit`, not with listeners, so the response keeps the listeners
 * it started with, and one that ends normally has none more.
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
    stopUnpiped(this as ServerResponse, source, state.reason)
    return result
  }
}

/** Put the over-response prototype above `res`'s own, once. */
function install(res: ServerResponse): void {
  Object.setPrototypeOf(res, overPrototype(Object.getPrototypeOf(res) as object))
  const target = res as unknown as Record<string, unknown>
  for (const method of OWN_CHECKED) {
    const own = Object.hasOwn(res, method) ? target[method] : undefined
    if (typeof own !== 'function') continue
    target[method] = method === 'emit' ? emitting(own as Emit) : swallowed(method, own as Method)
  }
}

/**
 * After the deadline answered, turn every writer on this one response into a
 * no-op that reports the call: the handler still running gets no "Cannot set
 * headers after they are sent", no "write after end" error event, and its
 * chained calls (`res.status(200).json(…)`) keep working on nothing. Every
 * source piped into it is stopped (see `stopPipedSources`).
 *
 * The response gets the over-response prototype above its own; a writer that
 * is an own property of the response (a middleware's wrapper, as
 * `compression` and `on-headers` install) is wrapped on the response
 * itself, since it would hide the prototype's. Nothing is ever put back:
 * late writes by definition come after the response finished, and the state
 * dies with the response (nothing is registered anywhere else).
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
  const state = over.get(res)
  if (state === undefined) {
    over.set(res, { reason, report })
    install(res)
  } else if (state.report === undefined) {
    state.reason = reason
    state.report = report
  }
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
 * Costs the prototype swap above (about 2 µs), on these paths only.
 */
export function stopPipedSources(res: ServerResponse, reason: unknown): void {
  if (over.has(res)) return
  over.set(res, { reason, report: undefined })
  install(res)
}

/**
 * A source Node just unpiped from a response that is over early:
 * - the request's own body (`req.pipe(res)`) is left to flow into nothing,
 *   as Node drops a body nobody reads: destroying it would take the
 *   keep-alive connection down;
 * - a source something else reads (a stream fanned out to several
 *   destinations) goes on for them;
 * - one that already ended or was destroyed needs nothing;
 * - any other was read for this response alone: it is destroyed, as the
 *   deadline's signal given to `pipeline` would have done — with the
 *   reason (the deadline's error, the client's leaving) where someone
 *   listens for an error (`pipeline` does, and rejects with it), without
 *   where nobody does (an 'error' event nobody listens to is an uncaught
 *   exception).
 */
function stopUnpiped(res: ServerResponse, source: Readable | undefined, reason: unknown): void {
  if (typeof source?.destroy !== 'function' || source.destroyed || source.readableEnded) return
  if (source === res.req) return
  if (source.listenerCount('data') > 0 || source.listenerCount('readable') > 0) return
  source.destroy(source.listenerCount('error') > 0 ? (reason as Error) : undefined)
}
