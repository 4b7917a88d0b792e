import type { Server } from 'node:http'
import { performance } from 'node:perf_hooks'
import { setImmediate } from 'node:timers'

/**
 * Resolves once the event loop has polled for I/O again: what had reached
 * this process's sockets when it was called — a request in a kept-alive
 * connection's buffer, a connection waiting to be accepted — has been read
 * (or accepted) by then.
 *
 * `close()` comes in the middle of a turn of the loop (a stop signal's
 * handler, under load one turn behind its sockets). Closed there, the
 * listener reset the connections still waiting to be accepted, and a
 * kept-alive connection whose next request sat unread in its buffer looked
 * idle (nothing read since its last answer) and was reset too: requests the
 * client had sent before the stop, never answered, logged or counted. Two
 * immediates: the first runs in this turn's check phase, the second in the
 * next one's, after its poll (which does not block while an immediate is
 * pending). Node's own `setImmediate`, not the global: an app's test that
 * fakes timers replaces the global one, and the gateway's `close()` then
 * never resolved until the test moved fake time.
 */
export function afterPendingReads(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)))
}

/**
 * The longest it accepts for, ms: the backlog there was at the stop, not a
 * stream of new connections (a client opening one every 2 ms, under load,
 * kept close() accepting, each answered 503, for 5 s).
 */
const MAX_ACCEPTING_MS = 100

/**
 * `afterPendingReads()`, again while the last one saw `server` accept a
 * connection: resolves once one has accepted none, the listener's backlog
 * then empty, so closing it resets nobody (and the requests of those
 * accepted have been read). libuv accepts one waiting connection per turn
 * of the loop (Node 20 on Linux): one `afterPendingReads()` took one or two
 * of ten connections that came while the process was busy, and closing the
 * listener reset the rest, their requests unanswered, unlogged, uncounted.
 * With none waiting, it is the one `afterPendingReads()`.
 */
export async function afterWaitingConnections(server: Server): Promise<void> {
  const until = performance.now() + MAX_ACCEPTING_MS
  let accepted = 0
  const count = () => {
    accepted++
  }
  server.on('connection', count)
  try {
    let before: number
    do {
      before = accepted
      await afterPendingReads()
    } while (accepted !== before && performance.now() < until)
  } finally {
    server.off('connection', count)
  }
}
