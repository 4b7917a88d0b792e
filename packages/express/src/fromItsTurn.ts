import type { ServerResponse } from 'node:http'
import { queued } from './writeExpired.js'

const nothing = (): void => {}

/**
 * @internal Starts the grace that bounds an answer whose end may never
 * leave: `start` runs now, or, for a response queued behind another
 * pipelined answer on its connection (no socket yet: see `queued`), when
 * its turn comes (Node gives it the socket, its 'socket' event, and hands
 * the socket what it held for it; `start` runs just after that). Its wait
 * there is the answer ahead's, no sign of a store that never answers or of
 * a client that stopped reading, and a destroy meanwhile took the shared
 * connection: a grace armed at once destroyed an answer complete while it
 * waited (the caller never got it, nor anything pipelined after it), and
 * one left out of the bound was held for good once its turn came (all but
 * its last byte sent, the socket open).
 *
 * `until` says what completes the answer, after which nothing is started:
 * - `'end'` (our own answers: `deadline()`'s 504 and `respond`'s, on the
 *   deadline's clock; `deadlineErrors()`'s 504 and `strict`'s 400, on a
 *   system timer: see `destroyIfEndStalls`): their `end` a middleware ahead
 *   completes later (express-session saving to its store) done, Node sends
 *   them as any other.
 * - `'finish'` (a started stream the deadline ended): its end is called,
 *   but may never leave — a client that stopped reading, or a middleware
 *   that never completes it — until Node has handed the socket all of it.
 *   Queued, such a stream may hold megabytes: what it wrote while it
 *   waited, all of it still to go at its turn.
 *
 * Returns what forgets a wait for the turn not yet over (the request ended
 * before it).
 */
export function fromItsTurn(
  res: ServerResponse,
  start: () => void,
  until: 'end' | 'finish' = 'end',
): () => void {
  const over = (): boolean =>
    res.destroyed || (until === 'end' ? res.writableEnded : res.writableFinished)
  if (over()) return nothing
  if (!queued(res)) {
    start()
    return nothing
  }
  let forgotten = false
  const onTurn = (): void => {
    // After Node's flush of what it held for the response, which follows
    // its 'socket' event in the same call: a bound judging it by progress
    // takes its first mark from there, not from before its bytes left.
    queueMicrotask(() => {
      if (!forgotten && !over()) start()
    })
  }
  res.once('socket', onTurn)
  return () => {
    forgotten = true
    res.removeListener('socket', onTurn)
  }
}
