import { once } from 'node:events'
import type { Deadline } from '@hourglass/core'
import type { Response } from 'express'

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
 */
export async function flushedOrCut(
  res: Response,
  event: 'drain' | 'finish',
  deadline: Deadline,
  onCut: () => void,
): Promise<void> {
  const controller = new AbortController()
  const off = deadline.onDone(() => {
    if (!res.destroyed) {
      onCut()
      ;(res.socket ?? res).destroy()
    }
    controller.abort()
  })
  try {
    await Promise.race([
      once(res, event, { signal: controller.signal }),
      once(res, 'close', { signal: controller.signal }),
    ])
  } catch {
    // The other event won, or the deadline ended: either way stop waiting.
  } finally {
    off()
    controller.abort()
  }
}
