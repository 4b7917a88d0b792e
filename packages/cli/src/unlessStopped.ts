import { outcomeWithin, type WorkOutcome } from '@hourglass/core'

/** What `unlessStopped` gives when the stop came first. */
export const STOPPED: unique symbol = Symbol('stopped')

/** Work abandoned by a stop and still running, until it settles. */
const abandonedWork = new Set<Promise<unknown>>()

/**
 * Resolves true once every piece of work a stop abandoned has settled,
 * false if some still runs after `withinMs`. Node's exit waits for every
 * thread of libuv's pool, and a lookup on a hung resolver, or a read of a
 * FIFO whose writer stays silent, holds one: the process that said it
 * stopped lived on until the lookup gave up. The binary asks this before
 * it exits, and ends by the signal (which waits for no thread) when false.
 */
export async function abandonedWorkSettled(withinMs: number): Promise<boolean> {
  if (abandonedWork.size === 0) return true
  // Each piece leaves the set as it settles, whichever way (see below).
  return (await outcomeWithin(Promise.all([...abandonedWork]), withinMs)) !== undefined
}

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
  let settled: WorkOutcome<T>
  try {
    // Rejects only when `stop` aborts first; `work`'s own failure is an
    // outcome. No timer (Infinity): never undefined.
    settled = (await outcomeWithin(work, Number.POSITIVE_INFINITY, {
      signal: stop,
    })) as WorkOutcome<T>
  } catch {
    // Its failure, if it ever comes, is no one's to hear: not an unhandled rejection.
    const running = work.then(
      () => {},
      () => {},
    )
    abandonedWork.add(running)
    void running.then(() => abandonedWork.delete(running))
    abandoned?.()
    return STOPPED
  }
  if (!settled.ok) throw settled.error
  return settled.value
}
