import { type Clock, outcomeWithin, systemClock } from '@hourglass/core'
import { StoreTimeoutError } from '../errors/StoreTimeoutError.js'

/**
 * `work`'s outcome, or a `StoreTimeoutError` once `ms` has passed on `clock`
 * without it settling (`work` goes on; its late outcome is dropped).
 * Infinity: `work` as it is. What bounds a store's round trip whatever the
 * client's own settings: a frozen Redis keeps the connection `ready` and
 * answers nothing, a client queueing commands offline holds them until
 * Redis is back, a store of the user's may hang — and a call with no
 * deadline waited for good. `who` and `option` name who did not answer and
 * the option that bounds it. Core's `outcomeWithin`, so a `ManualClock`
 * drives it, a store that never answers does not keep the wait, and an
 * answer that came in as the timer fired is taken.
 */
export async function answeredWithin<T>(
  work: Promise<T> | T,
  ms: number,
  who: string,
  option: string,
  clock: Clock = systemClock,
): Promise<T> {
  if (!(ms < Number.POSITIVE_INFINITY)) return work
  const settled = await outcomeWithin(work, ms, { clock })
  if (settled === undefined) throw new StoreTimeoutError(who, option, ms)
  if (!settled.ok) throw settled.error
  return settled.value
}
