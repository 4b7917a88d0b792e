import { messageOf } from './messageOf.js'

/**
 * A stop's reason as a Node stream can be destroyed with: `destroy(err)`
 * reads `err.stack` first, which throws for a revoked Proxy and for an Error
 * whose `message` getter throws (V8 formats the trace on that first read). A
 * caller aborts with any value; handed on as it was, undici's destroy of a
 * body or request stream threw — uncaught — and the stream never settled.
 * Such a reason is handed on as an Error saying what it could of it, the
 * reason itself as its `cause`; any other, as it is. Never throws.
 */
export function streamableReason(reason: unknown): unknown {
  if (typeof reason !== 'object' || reason === null) return reason
  try {
    void (reason as { stack?: unknown }).stack
    return reason
  } catch {
    return new Error(messageOf(reason), { cause: reason })
  }
}
