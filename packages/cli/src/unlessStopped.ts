/** What `unlessStopped` gives when the stop came first. */
export const STOPPED: unique symbol = Symbol('stopped')

/**
 * The work `start` begins, raced against `stop`: its result, or `STOPPED`
 * once `stop` aborts (at once, not when the work ends: a read of a FIFO
 * nobody writes, a lookup on a hung resolver, never ends). Not begun when
 * `stop` has aborted already. Work abandoned is left to finish or fail by
 * itself, unheard; `abandoned` is called when it still runs as the stop
 * comes, to let go of what it holds.
 */
export async function unlessStopped<T>(
  stop: AbortSignal,
  start: () => Promise<T>,
  abandoned?: () => void,
): Promise<T | typeof STOPPED> {
  if (stop.aborted) return STOPPED
  const work = start()
  let onAbort = () => {}
  const stopped = new Promise<typeof STOPPED>((resolve) => {
    onAbort = () => resolve(STOPPED)
    stop.addEventListener('abort', onAbort, { once: true })
  })
  try {
    const first = await Promise.race([work, stopped])
    if (first === STOPPED) {
      // Its failure, if it ever comes, is no one's to hear: not an unhandled rejection.
      work.catch(() => {})
      abandoned?.()
    }
    return first
  } finally {
    stop.removeEventListener('abort', onAbort)
  }
}
