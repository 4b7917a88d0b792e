import type { Clock } from '@hourglass/core'

/** Something a waiter can be woken by: a slot's waker set. */
export interface Wakeable {
  wakers: Set<() => void>
}

/**
 * Wait `ms` on `clock`, or until one of `wakeables` changes, whichever comes
 * first; reject with the signal's reason if one aborts. Every timer, waker
 * and listener it adds is removed when it settles.
 */
export function waitForChange(
  clock: Clock,
  ms: number,
  wakeables: readonly Wakeable[],
  signals: readonly AbortSignal[],
): Promise<'timer' | 'change'> {
  for (const signal of signals) if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    let timer: unknown
    const onAbort = (event: Event) => {
      cleanup()
      reject((event.target as AbortSignal).reason)
    }
    const onChange = () => {
      cleanup()
      resolve('change')
    }
    function cleanup() {
      clock.clearTimeout(timer)
      for (const signal of signals) signal.removeEventListener('abort', onAbort)
      for (const w of wakeables) w.wakers.delete(onChange)
    }
    timer = clock.setTimeout(
      () => {
        cleanup()
        resolve('timer')
      },
      Math.max(0, ms),
    )
    for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true })
    for (const w of wakeables) w.wakers.add(onChange)
  })
}
