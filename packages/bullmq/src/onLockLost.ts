import type { Job } from 'bullmq'
import type { JobLockLostWhy } from './JobLockLostError.js'

/** The part of a BullMQ Worker this needs: its events. */
interface WorkerEvents {
  on(event: string, listener: (...args: unknown[]) => void): unknown
  off(event: string, listener: (...args: unknown[]) => void): unknown
  cancelJob(...args: unknown[]): unknown
  /** Set once the worker starts closing (BullMQ's `close()` promise). */
  readonly closing?: unknown
  /** True once it has closed, just before it emits 'closed' (BullMQ's QueueBase). */
  readonly closed?: unknown
}

/** Per worker: the running attempts waiting to hear of their job's lost lock, by job id. */
const watchers = new WeakMap<WorkerEvents, Map<string, Set<Listener>>>()

type Listener = (why: JobLockLostWhy) => void

/**
 * @internal Call `listener` when the worker running `job` holds its lock
 * no more: it reports the lock lost (`lockRenewalFailed` with the job's id,
 * `why` `renewal_failed`), or it closes while the attempt runs (`closed`,
 * `why` `worker_closed`). BullMQ 6 aborts the processor's signal only for
 * `cancelJob`: on a lost lock it emits that event and an `error`, and the
 * attempt ran on while another worker, given the job by the stall check,
 * ran it too. A force close (`worker.close(true)`) emits `closed` without
 * waiting for the jobs it had started, and aborts nothing: their locks are
 * no longer renewed, so the stall check hands them to another worker, and
 * their ends are not written (BullMQ skips the write once its connection
 * is closing) — the same job twice, both attempts reported completed. A
 * close that waits for its jobs (`close()`) emits `closed` after they
 * ended, so an attempt still watched then was left behind by force. One
 * listener pair per worker, not per job (a worker with concurrency 100
 * would pass Node's listener warning), removed when the worker closes.
 * Returns the undo; a job not fetched by a Worker (`job.queue` is the
 * Worker for those) has nothing to watch.
 */
export function onLockLost(job: Job, listener: Listener): () => void {
  const worker = workerOf(job)
  const id = job.id
  if (worker === undefined || id === undefined) return () => {}
  // Closed already (a job a force close left in the worker's fetch queue,
  // started after it): nobody renews its lock, nothing it does is recorded.
  if (worker.closed === true) {
    listener('worker_closed')
    return () => {}
  }
  // Closing, on a BullMQ that does not tell whether it has closed yet: a
  // listener added after its 'closed' would never be released.
  if (worker.closing && typeof worker.closed !== 'boolean') return () => {}
  let byJob = watchers.get(worker)
  if (byJob === undefined) {
    const jobs = new Map<string, Set<Listener>>()
    byJob = jobs
    const failed = (ids: unknown) => {
      if (!Array.isArray(ids)) return
      for (const lost of ids)
        for (const call of [...(jobs.get(String(lost)) ?? [])]) call('renewal_failed')
    }
    const closed = () => {
      worker.off('lockRenewalFailed', failed)
      worker.off('closed', closed)
      watchers.delete(worker)
      for (const calls of [...jobs.values()]) for (const call of [...calls]) call('worker_closed')
    }
    worker.on('lockRenewalFailed', failed)
    worker.on('closed', closed)
    watchers.set(worker, jobs)
  }
  const jobs = byJob
  let calls = jobs.get(id)
  if (calls === undefined) {
    calls = new Set()
    jobs.set(id, calls)
  }
  const own = calls
  own.add(listener)
  return () => {
    own.delete(listener)
    if (own.size === 0 && jobs.get(id) === own) jobs.delete(id)
  }
}

/** The Worker that fetched `job`: BullMQ builds a worker's jobs with the worker as their `queue`. */
function workerOf(job: Job): WorkerEvents | undefined {
  let queue: unknown
  try {
    queue = (job as unknown as { queue?: unknown }).queue
  } catch {
    return undefined
  }
  if (typeof queue !== 'object' || queue === null) return undefined
  const q = queue as Partial<WorkerEvents>
  // cancelJob: a Worker's, not a Queue's (a job fetched with queue.getJob).
  if (
    typeof q.on !== 'function' ||
    typeof q.off !== 'function' ||
    typeof q.cancelJob !== 'function'
  ) {
    return undefined
  }
  return q as WorkerEvents
}
