import { boundsRefusal, hasBound, settleWithin, type WorkOutcome } from './outcomeWithin.js'
import type { WaitOptions } from './wait.js'

/**
 * `work`'s outcome, unless the deadline or the signal ends first: then its
 * reason, at once (an observe-only deadline never ends it, as with `wait`).
 * For round trips to a store that may never answer — a Redis that is down
 * behind a client that queues commands (ioredis's default offline queue),
 * or paused — which a call must not outlive its deadline, nor ignore its
 * cancel, waiting on. What `work` does when it settles later still happens.
 * Without a deadline or a signal it is `work`'s outcome, however long it takes.
 */
export async function untilEnded<T>(
  work: Promise<T> | T,
  until: Pick<WaitOptions, 'deadline' | 'signal' | 'clock'> | null = {},
): Promise<T> {
  // Omitted or `null`: no bound (it threw reading `until.deadline`). A value
  // or a thenable that is no Promise is awaited as `await` would (it threw
  // "work.catch is not a function" once a deadline was given).
  until ??= {}
  // `false` too: through `wait(Infinity)` it kept the process alive while the work was pending.
  if (!hasBound(until)) return work
  // Refused naming this function, as `outcomeWithin` names itself.
  const refused = boundsRefusal('untilEnded', until)
  if (refused) return Promise.reject(refused)
  // No timer: only `work` settling (or the deadline, the signal) ends the
  // wait, and `outcomeWithin`'s wait cuts `work`'s link to this caller when it does.
  const settled = (await settleWithin(work, Number.POSITIVE_INFINITY, until)) as WorkOutcome<T>
  if (!settled.ok) throw settled.error
  return settled.value
}
