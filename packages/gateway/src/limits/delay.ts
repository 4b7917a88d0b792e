import type { Clock } from '@hourglass/core'

/** Wait `ms` on `clock`; reject with the signal's reason if it aborts. Leaves no timer or listener. */
export function delay(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clock.clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
