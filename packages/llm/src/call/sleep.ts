import { type Clock, type Deadline, systemClock } from '@hourglass/core'

/**
 * Waits `ms` on the deadline's clock (so a `ManualClock` drives it), ending
 * early with the deadline's or the caller's reason. Leaves no timer or
 * listener behind either way.
 */
export function sleep(
  ms: number,
  deadline: Deadline | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  const clock: Clock = deadline?.clock ?? systemClock
  const signals = [deadline?.signal, signal].filter((s): s is AbortSignal => s !== undefined)
  for (const s of signals) if (s.aborted) return Promise.reject(s.reason)
  if (ms <= 0) return Promise.resolve()
  return new Promise<void>((resolve, reject) => {
    const cleanup = () => {
      clock.clearTimeout(timer)
      for (const s of signals) s.removeEventListener('abort', onAbort)
    }
    const onAbort = (event: Event) => {
      cleanup()
      reject((event.target as AbortSignal).reason)
    }
    const timer = clock.setTimeout(() => {
      cleanup()
      resolve()
    }, ms)
    for (const s of signals) s.addEventListener('abort', onAbort, { once: true })
  })
}
