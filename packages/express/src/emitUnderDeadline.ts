import type { IncomingMessage } from 'node:http'
import { type Deadline, runWithDeadline } from '@hourglass/core'
import { replaceOwn } from './replaceOwn.js'

type Emit = (this: unknown, event: string | symbol, ...args: unknown[]) => boolean

/**
 * Runs the listeners of the body's events (`data`, `end`, `readable`)
 * inside the request's deadline, as Node's `EventEmitterAsyncResource` runs
 * its listeners in the scope it was made in. Node emits a chunk that
 * arrives later, and the body's end, from the connection's parser, in the
 * context the connection was accepted in: a handler reading its body itself
 * (`req.on('data')`, `req.on('end')`, the transforms of a `pipeline(req,
 * …)`) read no `currentDeadline()` there once the first chunk had gone, so
 * an outbound call made from them carried no deadline and was not stopped
 * at the 504, nor was a `guard` or a timer started there. Not `close`,
 * `aborted` or `error`: they come once the request is cut or over, and what
 * a listener starts then (cleanup, an audit call) must not be refused by a
 * deadline its client's departure cancelled. Defined on the request (an own
 * `emit`), so a sub-app's prototype reset keeps it.
 *
 * Only for a request with a body to come: a property added to a request
 * whose prototype Express set costs microseconds (see IngressRequest), and
 * a request without one has nothing arriving later — its end is emitted
 * from whoever reads it, inside the chain.
 */
export function emitUnderDeadline(req: IncomingMessage, deadline: Deadline): void {
  if (!bodyToCome(req)) return
  const emit = req.emit as Emit
  replaceOwn(
    req,
    'emit',
    function emitInDeadline(this: unknown, event: string | symbol, ...args: unknown[]) {
      if (event !== 'data' && event !== 'end' && event !== 'readable') {
        return emit.call(this, event, ...args)
      }
      return runWithDeadline(deadline, () => emit.call(this, event, ...args))
    },
  )
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
