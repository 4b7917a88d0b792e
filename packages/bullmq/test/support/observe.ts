import type { HourglassChannel } from '@hourglass/core'
import type { Job, Queue, QueueEvents } from 'bullmq'
import { onTestFinished } from 'vitest'

export interface Finished {
  ok: boolean
  value?: unknown
  state: string
  failedReason: string | undefined
  attemptsMade: number
}

/** Wait (on QueueEvents) until a job is completed or failed for good, then read what Redis says about it. */
export async function finished(job: Job, events: QueueEvents, queue: Queue): Promise<Finished> {
  const outcome = await job.waitUntilFinished(events).then(
    (value) => ({ ok: true, value }),
    () => ({ ok: false }),
  )
  const stored = await queue.getJob(job.id!)
  return {
    ...outcome,
    state: (await stored?.getState()) ?? 'missing',
    failedReason: stored?.failedReason,
    attemptsMade: stored?.attemptsMade ?? -1,
  }
}

/** Every message published on `channel` during the test (unsubscribed after it). */
export function collect<T>(channel: HourglassChannel<T>): T[] {
  const seen: T[] = []
  const listener = (message: T) => seen.push(message)
  channel.subscribe(listener)
  onTestFinished(() => channel.unsubscribe(listener))
  return seen
}

/** A promise and its resolve, for "the processor got here" signals. */
export function signal<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}
