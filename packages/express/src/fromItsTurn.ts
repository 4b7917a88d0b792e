import type { ServerResponse } from 'node:http'
import { queued } from './writeExpired.js'

const nothing = (): void => {}

/**
 * @internal Starts the grace that bounds an answer whose `end` a middleware
 * ahead completes later (express-session saving to its store) and has not
 * completed yet: `start` runs now, or, for a response queued behind another
 * pipelined answer on its connection (no socket yet: see `queued`), when
 * its turn comes (Node gives it the socket, its 'socket' event). Its wait
 * there is the answer ahead's, no sign of a store that never answers, and a
 * destroy meanwhile took the shared connection: a grace armed at once
 * destroyed an answer complete while it waited (the caller never got it,
 * nor anything pipelined after it), and one left out of the bound was held
 * for good once its turn came (all but its last byte sent, the socket
 * open). Nothing is started for an answer complete by then (its end done:
 * Node sends it as any other) or over.
 *
 * One way for every answer so bounded: `deadline()`'s 504 and `respond`'s
 * answer (on the deadline's clock), `deadlineErrors()`'s 504 and `strict`'s
 * 400 (a system timer: see `destroyIfEndStalls`). Returns what forgets a
 * wait for the turn not yet over (the request ended before it).
 */
export function fromItsTurn(res: ServerResponse, start: () => void): () => void {
  if (res.writableEnded || res.destroyed) return nothing
  if (!queued(res)) {
    start()
    return nothing
  }
  const onTurn = (): void => {
    if (!res.writableEnded && !res.destroyed) start()
  }
  res.once('socket', onTurn)
  return () => res.removeListener('socket', onTurn)
}
