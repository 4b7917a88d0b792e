import type { IncomingMessage } from 'node:http'
import { type ContextSnapshot, captureContext, runInContext } from '@hourglass/core'
import { replaceOwn } from './replaceOwn.js'

type Listener = (this: unknown, ...args: unknown[]) => unknown
type Emit = (this: unknown, event: string | symbol, ...args: unknown[]) => boolean

/**
 * Runs each listener of the body's events (`data`, `end`, `readable`) in
 * the context it was added in, as a promise continuation resumes in the
 * context that awaited. Node emits a chunk that arrives later, and the
 * body's end, from the connection's parser, in the context the connection
 * was accepted in: a handler reading its body itself (`req.on('data')`,
 * `req.on('end')`, the transforms of a `pipeline(req, …)`) read no
 * `currentDeadline()` there once the first chunk had gone, so an outbound
 * call made from them carried no deadline and was not stopped at the 504,
 * nor was a `guard` or a timer started there. Each listener's own context,
 * not the request's: one added under a child deadline or a slice
 * (`req.plan.run`), or with the deadline hidden (`runWithDeadline(undefined,
 * …)`), runs under that, as the code that added it did.
 *
 * The context is taken as a listener is added (`newListener`, which Node
 * emits for `on`, `once`, `prepend…` alike, with the listener as given) and
 * used at the emit; a listener added before, or through EventEmitter's
 * prototype on another object, runs as Node runs it. Only for a request with
 * a body to come: each costs an own `emit` (a property added to a request
 * whose prototype Express set costs microseconds, see IngressRequest), and a
 * request without one has nothing arriving later.
 */
export function bodyListenersInContext(req: IncomingMessage): void {
  if (!bodyToCome(req)) return
  const emit = req.emit as Emit
  // A Map, not a WeakMap: it dies with the request (an ephemeron table of
  // short-lived keys is walked by every GC, see IngressRequest).
  const added = new Map<object, ContextSnapshot>()
  const ok = replaceOwn(
    req,
    'emit',
    function emitInContext(this: IncomingMessage, event: string | symbol, ...args: unknown[]) {
      if (event !== 'data' && event !== 'end' && event !== 'readable') {
        return emit.call(this, event, ...args)
      }
      // A copy, as EventEmitter's own emit calls them: a listener that adds
      // or removes one changes the next emit, not this one.
      const listeners = this.rawListeners(event) as Listener[]
      if (listeners.length === 0) return emit.call(this, event, ...args)
      for (const listener of listeners) {
        // `once` listeners are Node's wrappers, the listener as given on `.listener`.
        const given = (listener as { listener?: object }).listener ?? listener
        const context = added.get(given)
        if (context === undefined) listener.apply(this, args)
        else runInContext(context, () => listener.apply(this, args))
      }
      return true
    },
  )
  if (!ok) return
  req.on('newListener', (event: string | symbol, listener: object) => {
    if (event === 'data' || event === 'end' || event === 'readable') {
      added.set(listener, captureContext())
    }
  })
}

/**
 * HTTP/1 frames a body by `Transfer-Encoding` or a `Content-Length` (RFC
 * 9112 §6.3); a request with neither has none. HTTP/2 frames it by its
 * stream, with no header to tell: taken as having one.
 */
function bodyToCome(req: IncomingMessage): boolean {
  if (req.httpVersionMajor >= 2) return true
  const { headers } = req
  if (headers['transfer-encoding'] !== undefined) return true
  const length = headers['content-length']
  return length !== undefined && length !== '0'
}
