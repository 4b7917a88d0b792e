import { EventEmitter } from 'node:events'
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
 * emits for `on`, `once`, `prepend…` alike, with the listener as given);
 * those of listeners no longer added are dropped once they outnumber the
 * live ones (a reader adding and removing a listener per read kept every
 * one until the request ended; Node emits no `removeListener` for the only
 * listener of an event, so that cannot tell). A listener added before, or
 * after `req.removeAllListeners()` (which takes the recorder as well), runs
 * as Node runs it; so does one function added twice, in two contexts, in
 * the later one. Only for a request with a body
 * to come: each costs an own `emit` (a property added to a request whose
 * prototype Express set costs microseconds, see IngressRequest), and a
 * request without one has nothing arriving later.
 */
export function bodyListenersInContext(req: IncomingMessage): void {
  if (!bodyToCome(req)) return
  const emit = req.emit as Emit
  // A Map, not a WeakMap: it dies with the request (an ephemeron table of
  // short-lived keys is walked by every GC, see IngressRequest).
  const added = new Map<object, ContextSnapshot>()
  let pruneAt = PRUNE_FROM
  const ok = replaceOwn(
    req,
    'emit',
    function emitInContext(this: IncomingMessage, event: string | symbol, ...args: unknown[]) {
      if (event !== 'data' && event !== 'end' && event !== 'readable') {
        return emit.call(this, event, ...args)
      }
      // A copy, as EventEmitter's own emit calls them: a listener that adds
      // or removes one changes the next emit, not this one — their contexts
      // too, read before the first is called.
      const listeners = this.rawListeners(event) as Listener[]
      if (listeners.length === 0) return emit.call(this, event, ...args)
      const contexts = listeners.map((listener) => added.get(given(listener)))
      for (let i = 0; i < listeners.length; i++) {
        const listener = listeners[i] as Listener
        const context = contexts[i]
        const result =
          context === undefined
            ? listener.apply(this, args)
            : runInContext(context, () => listener.apply(this, args))
        if (result != null) catchRejection(this, result, event, args)
      }
      return true
    },
  )
  if (!ok) return
  let pruning = false
  const prune = () => {
    pruning = false
    const live = new Set<object>()
    for (const body of BODY_EVENTS) {
      for (const l of req.rawListeners(body)) live.add(given(l as Listener))
    }
    for (const key of added.keys()) if (!live.has(key)) added.delete(key)
    pruneAt = Math.max(PRUNE_FROM, added.size * 2)
  }
  req.on('newListener', (event: string | symbol, listener: object) => {
    if (event !== 'data' && event !== 'end' && event !== 'readable') return
    added.set(listener, captureContext())
    // Once every add under way is in: Node emits `newListener` before it
    // adds the listener, and one added from another's `newListener` (a
    // library watching for readers) pruned that outer one, not yet a listener.
    if (added.size >= pruneAt && !pruning) {
      pruning = true
      queueMicrotask(prune)
    }
  })
}

const BODY_EVENTS = ['data', 'end', 'readable'] as const

/** Contexts kept before those of listeners no longer added are dropped. */
const PRUNE_FROM = 32

/** The listener as given: `once` listeners are Node's wrappers of it (`.listener`). */
function given(listener: Listener): object {
  return (listener as { listener?: object }).listener ?? listener
}

/** EventEmitter's own, per instance (`captureRejections`), found by its description. */
const kCapture = Object.getOwnPropertySymbols(new EventEmitter()).find(
  (symbol) => symbol.description === 'kCapture',
)

/**
 * What EventEmitter's emit does with a listener's promise when the emitter
 * captures rejections (`EventEmitter.captureRejections`, or the option):
 * its rejection destroys the request (`Symbol.for('nodejs.rejection')`,
 * a stream's) or is emitted as `error`. Called by the emit above, an async
 * listener's rejection went nowhere: an unhandled rejection (the process
 * ended), the request never told.
 */
function catchRejection(
  emitter: IncomingMessage,
  result: unknown,
  event: string | symbol,
  args: unknown[],
): void {
  const target = emitter as unknown as Record<PropertyKey, unknown>
  const capture = kCapture === undefined ? EventEmitter.captureRejections : target[kCapture]
  if (capture !== true) return
  const then = (result as { then?: unknown }).then
  if (typeof then !== 'function') return
  then.call(result, undefined, (error: unknown) => {
    process.nextTick(() => {
      const rejection = target[Symbol.for('nodejs.rejection')]
      if (typeof rejection === 'function') {
        rejection.call(emitter, error, event, ...args)
        return
      }
      if (kCapture === undefined) {
        emitter.emit('error', error)
        return
      }
      const before = target[kCapture]
      try {
        target[kCapture] = false
        emitter.emit('error', error)
      } finally {
        target[kCapture] = before
      }
    })
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
