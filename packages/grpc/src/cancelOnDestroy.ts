import type { CallInvocationTransformer } from '@grpc/grpc-js'

/** A grpc-js client stream call, as `_destroy` sees it. */
interface ClientStreamCall {
  _destroy(error: Error | null, callback: (error?: Error | null) => void): void
  cancel(): void
  /** Readable and duplex calls (server-streaming, bidi). */
  readonly readableEnded?: boolean
  /** Writable calls (client-streaming). */
  readonly writableFinished?: boolean
  on(event: 'error', listener: (error: unknown) => void): unknown
  listenerCount(event: 'error'): number
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
 * One shared function per stream call: no closure, nothing per message.
 */
export const cancelOnDestroy: CallInvocationTransformer = (properties) => {
  const call = properties.call as Partial<ClientStreamCall>
  if (typeof call.cancel === 'function' && typeof call._destroy === 'function') {
    call._destroy = destroyAndCancel
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
    // it was given up through: with no listener left (a `for await` loop's
    // is gone, an `on('data')` reader may never have had one), emit threw
    // and the process crashed. Registered before the cancel.
    this.on('error', absorbCallStatus)
    this.cancel()
  }
  callback(error)
}

/**
 * A call status grpc-js emits on a stream its caller destroyed (the cancel's
 * `CANCELLED`, or whatever status raced it) is for nobody. Any other error
 * (the caller's own `destroy(error)`) is left as it was: thrown when nothing
 * else listens, as an unhandled `'error'` is.
 */
function absorbCallStatus(this: ClientStreamCall, error: unknown): void {
  if (isCallStatus(error)) return
  if (this.listenerCount('error') === 1) throw error
}

function isCallStatus(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, details } = error as { code?: unknown; details?: unknown }
  return typeof code === 'number' && typeof details === 'string'
}
