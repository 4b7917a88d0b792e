import { type Clock, systemClock, wait } from '@hourglass/core'
import { StoreTimeoutError } from '../errors/StoreTimeoutError.js'

/**
 * `work`'s outcome, or a `StoreTimeoutError` once `ms` has passed on `clock`
 * without it settling (`work` goes on; its late outcome is dropped).
 * Infinity: `work` as it is. What bounds a store's round trip whatever the
 * client's own settings: a frozen Redis keeps the connection `ready` and
 * answers nothing, a client queueing commands offline holds them until
 * Redis is back, a store of the user's may hang — and a call with no
 * deadline waited for good. `who` and `option` name who did not answer and
 * the option that bounds it. Core's one wait, so a `ManualClock` drives it.
 */
export async function answeredWithin<T>(
  work: Promise<T> | T,
  ms: number,
  who: string,
  option: string,
  clock: Clock = systemClock,
): Promise<T> {
  if (!(ms < Number.POSITIVE_INFINITY)) return work
  // A store of the user's may answer with a plain value, whatever its type says.
  const answer = Promise.resolve(work)
  // The one object `work`'s handlers reach (as in core's `untilEnded`): a
  // store that never answers keeps its handlers for good, and they must not
  // keep the wait, and what it reaches, with them.
  const link: Link<T> = { wake: undefined, outcome: undefined }
  await wait(ms, {
    clock,
    wakeOn: (wake) => {
      link.wake = wake
      answer.then(
        (value) => {
          link.outcome = { ok: true, value }
          link.wake?.()
        },
        (error: unknown) => {
          link.outcome = { ok: false, error }
          link.wake?.()
        },
      )
      return () => {
        link.wake = undefined
      }
    },
  })
  // Woken once `work` settled; else the time ran out first. An outcome
  // that came in as the timer fired is taken: the store did answer.
  const settled = link.outcome
  if (settled === undefined) throw new StoreTimeoutError(who, option, ms)
  if (!settled.ok) throw settled.error
  return settled.value
}

interface Link<T> {
  wake: (() => void) | undefined
  outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined
}
