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

interface Swallowing {
  reason: unknown
  report: (method: string) => void
}

/** The answered responses and what to say about a late write on each. */
const swallowing = new WeakMap<object, Swallowing>()

/**
 * One prototype per response prototype (per Express app): the writers it
 * has, each a no-op for an answered response, above the app's own. Swapping
 * a response's prototype costs about 2 µs; adding 34 own properties to it
 * cost about 200 µs (a response whose prototype Express set has a map of its
 * own, copied on every property added) — paid on every 504.
 */
const swallowingPrototypes = new WeakMap<object, object>()

function swallowingPrototype(proto: object): object {
  let cached = swallowingPrototypes.get(proto)
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
    const emit = base.emit as (this: unknown, event: string | symbol, ...args: unknown[]) => boolean
    methods.emit = { value: emitting(emit), writable: true, configurable: true }
    cached = Object.create(proto, methods) as object
    swallowingPrototypes.set(proto, cached)
  }
  return cached
}

type Method = (this: unknown, ...args: unknown[]) => unknown

/** `method` for an answered response; `original` for anything else it is called on. */
function swallowed(method: string, original: Method) {
  return function swallowedWrite(this: unknown, ...args: unknown[]): unknown {
    const state = swallowing.get(this as object)
    if (state === undefined) return original.apply(this, args)
    state.report(method)
    const last = args.at(-1)
    if (typeof last === 'function') process.nextTick(last as (error: unknown) => void, state.reason)
    return method === 'write' ? true : this
  }
}

/**
 * A stream piped in from now on: `pipe()` announces itself with this event.
 * Caught on `emit`, not with a 'pipe' listener, so the response keeps the
 * listeners it started with.
 */
function emitting(emit: (this: unknown, event: string | symbol, ...args: unknown[]) => boolean) {
  return function emitOnAnswered(
    this: unknown,
    event: string | symbol,
    ...args: unknown[]
  ): boolean {
    const state = event === 'pipe' ? swallowing.get(this as object) : undefined
    if (state !== undefined) {
      state.report('pipe')
      stopLatePipe(this as ServerResponse, args[0] as Readable | undefined, state.reason)
    }
    return emit.call(this, event, ...args)
  }
}

/**
 * After the deadline answered, turn every writer on this one response into a
 * no-op that reports the call: the handler still running gets no "Cannot set
 * headers after they are sent", no "write after end" error event, and its
 * chained calls (`res.status(200).json(…)`) keep working on nothing.
 *
 * The response gets the swallowing prototype above its own; a writer that
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
  if (swallowing.has(res)) return
  swallowing.set(res, { reason, report })
  Object.setPrototypeOf(res, swallowingPrototype(Object.getPrototypeOf(res) as object))
  const target = res as unknown as Record<string, unknown>
  for (const method of OWN_CHECKED) {
    const own = Object.hasOwn(res, method) ? target[method] : undefined
    if (typeof own !== 'function') continue
    target[method] = method === 'emit' ? emitting(own as never) : swallowed(method, own as Method)
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
