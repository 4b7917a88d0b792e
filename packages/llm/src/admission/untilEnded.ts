import { type WaitOptions, wait } from '@hourglass/core'

/**
 * `work`'s outcome, unless the deadline or the signal ends first: then its
 * reason, at once. For the cooldown store's round trips: a Redis that is
 * down behind a client that queues commands (ioredis's default offline
 * queue) or hangs never answers, and a call must not outlive its deadline —
 * nor ignore its cancel — waiting on it. What `work` does when it settles
 * later still happens (the store's answer is merged, its error logged).
 */
export async function untilEnded<T>(
  work: Promise<T>,
  until: Pick<WaitOptions, 'deadline' | 'signal' | 'clock'>,
): Promise<T> {
  if (until.deadline === undefined && until.signal === undefined) return work
  let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined
  await wait(Number.POSITIVE_INFINITY, {
    ...until,
    wakeOn: (wake) => {
      work.then(
        (value) => {
          outcome = { ok: true, value }
          wake()
        },
        (error: unknown) => {
          outcome = { ok: false, error }
          wake()
        },
      )
      return noop
    },
  })
  // Woken only once `work` settled.
  const settled = outcome as NonNullable<typeof outcome>
  if (!settled.ok) throw settled.error
  return settled.value
}

const noop = () => {}
