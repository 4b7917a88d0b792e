// Node's own, not the global: fake timers replace the global one (see the deferred cancel).
import { setImmediate } from 'node:timers'
import type { CallInvocationTransformer } from '@grpc/grpc-js'
import { type Turn, thisTurn } from './eventLoopTurn.js'

const EMIT = Symbol('cancelOnDestroy.emit')
const DESTROYED_WITH = Symbol('cancelOnDestroy.destroyedWith')
const MADE_IN = Symbol('cancelOnDestroy.madeIn')

/** A grpc-js client stream call, as `_destroy` sees it. */
interface ClientStreamCall {
  _destroy(error: Error | null, callback: (error?: Error | null) => void): void
  cancel(): void
  /** Readable and duplex calls (server-streaming, bidi). */
  readonly readableEnded?: boolean
  /** Writable calls (client-streaming). */
  readonly writableFinished?: boolean
  emit(event: string | symbol, ...args: unknown[]): boolean
  /** The `emit` it had before it was given up (see `emitAfterGivenUp`). */
  [EMIT]?: (event: string | symbol, ...args: unknown[]) => boolean
  /** The error it was destroyed with, if any: Node emits that one. */
  [DESTROYED_WITH]?: Error | null
  /** The turn of the event loop the call was made in. */
  [MADE_IN]?: Turn
}

/**
 * A grpc-js `callInvocationTransformer` (a client option, next to
 * `interceptors`) that cancels a streaming call when its stream is
 * destroyed before it ended: a `for await … break` over a server stream, a
 * `pipeline()` whose other end failed, a `stream.destroy()`. grpc-js's
 * client streams are plain Node streams whose `destroy()` does not touch the
 * call (grpc/grpc-node#1238): the call stayed open, the server went on
 * streaming until HTTP/2 flow control stalled it, for good when the call had
 * no deadline, and the client interceptor's hook stayed on the caller's
 * deadline until that ended. No interceptor can see it: grpc-js never hands
 * an interceptor the stream, and `destroy()` sends nothing down the call.
 *
 * Unary calls are left alone (they have no `destroy`). A stream destroyed
 * after it ended (Node's `autoDestroy` after `'end'`, or after `'finish'`
 * for a client-streaming call still awaiting its answer) is not cancelled.
 * One destroyed in the turn of the event loop it was made in is cancelled
 * when that turn is over. After the destroy, the stream emits only what
 * Node's `destroy()` emits: the call status grpc-js emits as `'error'` is
 * for nobody. One shared function per stream call: no closure, nothing per
 * message.
 */
export const cancelOnDestroy: CallInvocationTransformer = (properties) => {
  const call = properties.call as Partial<ClientStreamCall>
  if (typeof call.cancel === 'function' && typeof call._destroy === 'function') {
    call._destroy = destroyAndCancel
    call[MADE_IN] = thisTurn()
  }
  return properties
}

function destroyAndCancel(
  this: ClientStreamCall,
  error: Error | null,
  callback: (error?: Error | null) => void,
): void {
  // A readable's `'end'`, a writable's `'finish'`: destroyed as done, not given up.
  const over = this.readableEnded ?? this.writableFinished ?? false
  if (!over) {
    // grpc-js emits the cancelled call's status as `'error'` on the stream
    // it was given up through. With no listener left (a `for await` loop's
    // is gone, an `on('data')` reader may never have had one) emit threw and
    // the process crashed; with one, it heard of a cancel it had asked for
    // and, first, "1 CANCELLED" in place of the error it destroyed the
    // stream with (a `finished()` callback, a `for await` loop's throw).
    // Installed before the cancel, which grpc-js may answer at once.
    this[DESTROYED_WITH] = error
    this[EMIT] = this.emit
    this.emit = emitAfterGivenUp
    // grpc-js 1.14 sends a call cancelled before it made the call's stream,
    // and never resets it: a stream destroyed in the turn it was made in
    // (a pipeline() given an aborted signal) left its server streaming on,
    // never told, unless deadlineInterceptor() deferred the cancel itself.
    // Passed on once that turn is over, when the stream exists: a turn of the
    // real loop (`node:timers`), which fake timers do not hold back.
    if (this[MADE_IN]?.over === false) setImmediate(cancelGivenUp, this)
    else this.cancel()
  }
  callback(error)
}

function cancelGivenUp(call: ClientStreamCall): void {
  call.cancel()
}

/**
 * A destroyed stream emits what Node's `destroy()` emits (the error it was
 * given, if any, then `'close'`), not a call status grpc-js emits as
 * `'error'` on it afterwards (the cancel's `CANCELLED`, or whatever status
 * raced it): that is for nobody. Its `'status'` event is left as it is.
 */
function emitAfterGivenUp(
  this: ClientStreamCall,
  event: string | symbol,
  ...args: unknown[]
): boolean {
  const [error] = args
  if (event === 'error' && error !== this[DESTROYED_WITH] && isCallStatus(error)) return false
  return (this[EMIT] as NonNullable<ClientStreamCall[typeof EMIT]>).call(this, event, ...args)
}

function isCallStatus(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, details } = error as { code?: unknown; details?: unknown }
  return typeof code === 'number' && typeof details === 'string'
}
