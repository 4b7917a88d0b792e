import type { ServerResponse } from 'node:http'
import { responseProgress } from './responseProgress.js'
import { RESPOND_END_GRACE_MS } from './watchEnd.js'

/**
 * @internal A started stream `deadlineErrors()` ended itself (no
 * `deadline()` in the chain, or one that only observes) is destroyed once
 * `RESPOND_END_GRACE_MS` pass without a byte of it moving (see
 * `responseProgress`) before its end has left, as `deadline()` bounds the
 * end it gives one (see `IngressRequest#answer`). A client that stopped
 * reading with less than the socket's high-water mark waiting (an SSE feed
 * of small events) made no write wait for 'drain', so `writeExpired` ended
 * the stream rather than destroying it: the end sat in Node's buffer and the
 * socket stayed open for good (`server.timeout` is 0). A client that reads
 * it gets the clean end, however long the rest takes while it moves: a
 * stream queued behind a pipelined answer may hold megabytes when its turn
 * comes (see `fromItsTurn`). An answer whose `end` reached a
 * middleware that completes it later (express-session saving to a store
 * that never answers) is destroyed the same: `deadlineErrors()`'s 504, and
 * the 400 `deadline()` refuses a malformed header with under `strict` (its
 * deadline is released at once, so nothing of it can bound that end),
 * counted from their turn when queued behind a pipelined answer (see
 * `fromItsTurn`).
 *
 * A system timer: without `deadline()` there is no deadline clock to arm it
 * on. Unref'd, so it holds no process open; cleared on the response's
 * 'finish' or 'close'. Armed only on these error paths, never per request.
 */
export function destroyIfEndStalls(res: ServerResponse): void {
  const progress = responseProgress(res)
  let sent = progress()
  let timer: NodeJS.Timeout
  const settled = () => {
    clearTimeout(timer)
    res.removeListener('finish', settled)
    res.removeListener('close', settled)
  }
  const check = () => {
    const now = progress()
    if (now !== sent && !res.destroyed) {
      sent = now
      arm()
      return
    }
    settled()
    if (!res.writableFinished && !res.destroyed) res.destroy()
  }
  const arm = () => {
    timer = setTimeout(check, RESPOND_END_GRACE_MS)
    timer.unref()
  }
  arm()
  res.on('finish', settled)
  res.on('close', settled)
}
