import { type Deadline, systemClock } from '@hourglass/core'

/** Wait `ms` on the deadline's clock; rejects at once if the deadline or the signal ends first. */
export function sleep(
  ms: number,
  deadline: Deadline | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  const clock = deadline?.clock ?? systemClock
  const stop = deadline && !deadline.observe ? deadline.signal : undefined
  return new Promise<void>((resolve, reject) => {
    const cleanup = () => {
      clock.clearTimeout(timer)
      stop?.removeEventListener('abort', onAbort)
      signal?.removeEventListener('abort', onAbort)
    }
    const onAbort = () => {
      cleanup()
      reject(signal?.aborted ? signal.reason : stop?.reason)
    }
    const timer = clock.setTimeout(() => {
      cleanup()
      resolve()
    }, ms)
    stop?.addEventListener('abort', onAbort, { once: true })
    signal?.addEventListener('abort', onAbort, { once: true })
    if (stop?.aborted || signal?.aborted) onAbort()
  })
}
