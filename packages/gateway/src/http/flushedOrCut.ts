import { once } from 'node:events'
import type { Socket } from 'node:net'
import type { Deadline } from '@hourglass/core'
import type { Response } from 'express'

/**
 * How long an answer whose deadline ran out while it was queued behind an
 * earlier one on its connection gets, once its turn comes, to be taken by
 * the client before the connection is closed, in ms.
 */
export const QUEUED_GRACE_MS = 1000

/**
 * While such an answer waits for its turn: how long its connection may have
 * bytes waiting to go out and send none of them before it is taken for a
 * client that stopped reading, and closed, in ms.
 */
export const QUEUED_STALL_MS = 10_000

/**
 * How long an answer whose deadline was already over when its end began to
 * be waited for (a stream ended with the deadline's error event) may go
 * without a byte of it leaving before its connection is closed, in ms — the
 * grace @hourglass/express's `deadline()` gives the end it writes itself.
 */
export const ENDED_STALL_MS = 1000

/**
 * Waits for the client to take what `res` has buffered: `'drain'` (a
 * stream's next write may go) or `'finish'` (a whole answer handed to the
 * OS), or for the response to close. A client that keeps its connection
 * open but stops reading would hold this wait — and its socket, and the
 * answer buffered in it — for as long as it stays connected: no error can
 * reach it and `end()` never flushes. So when `deadline` ends first the
 * connection is closed (`onCut` first: the close that follows is not the
 * client leaving). Its socket, not `res`: if the ingress middleware's own
 * timer answered first, it ended `res` (which cannot flush either) and made
 * `res.destroy()` a no-op. A deadline ended by the client leaving (the
 * response is already closed) is no cut: that is a 499.
 *
 * An answer pipelined behind another on its connection (HTTP/1.1: no
 * socket yet, `res.socket` null) is not held by its client but by the
 * answer ahead of it. Cut at its deadline, it was lost behind a stream the
 * client was reading the whole time. So its deadline only starts a grace of
 * `QUEUED_GRACE_MS` from the moment its turn comes. Until then the
 * connection is watched, not timed: no bound on the answer ahead holds (the
 * host app's own routes, or its own `deadline()` when it mounts the
 * gateway's, may run longer than the gateway's `maxMs`), but an answer ahead
 * that was ended and is never taken holds the turn for good, so when the
 * connection has had bytes waiting and none of them taken for
 * `QUEUED_STALL_MS` it is closed, as for a client that stopped reading.
 *
 * A deadline already over when the wait begins (a stream the gateway's own
 * deadline ended, with its error event) cuts nothing at once — the end is
 * the client's to read, however long that takes while it moves — but a
 * connection that sends none of it for `ENDED_STALL_MS` is closed. Nothing
 * else bounds that end: the gateway's deadline runs out `replyReserveMs`
 * before the ingress middleware's, whose own grace is never armed once the
 * stream's error event reported the expiry; the end sat in Node's buffer,
 * the connection was held for as long as the client stayed, and the request
 * was never counted.
 */
export async function flushedOrCut(
  res: Response,
  event: 'drain' | 'finish',
  deadline: Deadline,
  onCut: () => void,
): Promise<void> {
  const controller = new AbortController()
  const { clock } = deadline
  let timer: unknown
  const cut = () => {
    if (!res.destroyed) {
      onCut()
      // Queued, `res` has no socket yet (its destroy waits for one): the
      // connection is the request's.
      ;(res.socket ?? res.req?.socket ?? res).destroy()
    }
    controller.abort()
  }
  const onTurn = () => {
    clock.clearTimeout(timer)
    timer = clock.setTimeout(cut, QUEUED_GRACE_MS)
  }
  // Progress of the connection's writes, as Node's own socket timeout reads
  // it: a write's bytes count in `bytesWritten` and `writableLength` alike
  // until the whole write is done, so only libuv's queue shows a large
  // write being taken piece by piece (a slow reader of one big answer).
  // Checked every `stallMs`: bytes waiting and none taken since, it is cut.
  let lastDone = -1
  let lastQueued = -1
  const watchProgress = (stallMs: number) => {
    const connection = res.req?.socket as
      | (Socket & { _handle?: { writeQueueSize?: number } })
      | undefined
    if (connection == null || connection.destroyed) return
    const done = connection.bytesWritten - connection.writableLength
    const queued = connection._handle?.writeQueueSize ?? -1
    if (connection.writableLength > 0 && done === lastDone && queued === lastQueued) return cut()
    lastDone = done
    lastQueued = queued
    timer = clock.setTimeout(() => watchProgress(stallMs), stallMs)
  }
  let off = () => {}
  if (deadline.done && res.socket !== null) watchProgress(ENDED_STALL_MS)
  else {
    off = deadline.onDone(() => {
      if (res.socket === null && !res.destroyed) {
        res.once('socket', onTurn)
        watchProgress(QUEUED_STALL_MS)
      } else cut()
    })
  }
  try {
    await Promise.race([
      once(res, event, { signal: controller.signal }),
      once(res, 'close', { signal: controller.signal }),
    ])
  } catch {
    // The other event won, or the deadline ended: either way stop waiting.
  } finally {
    off()
    res.off('socket', onTurn)
    if (timer !== undefined) clock.clearTimeout(timer)
    controller.abort()
  }
}
