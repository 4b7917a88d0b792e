import type { Job } from 'bullmq'

/** The part of a BullMQ Worker this needs: its events. */
interface WorkerEvents {
  on(event: string, listener: (...args: unknown[]) => void): unknown
  off(event: string, listener: (...args: unknown[]) => void): unknown
  cancelJob(...args: unknown[]): unknown
  /** Set once the worker starts closing (BullMQ's `close()` promise). */
  readonly closing?: unknown
}

/** Per worker: the running attempts waiting to hear of their job's lost lock, by job id. */
const watchers = new WeakMap<WorkerEvents, Map<string, Set<() => void>>>()

/**
 * @internal Call `listener` when the worker running `job` reports its lock
 * lost (`lockRenewalFailed` with the job's id). BullMQ 6 aborts the
 * processor's signal only for `cancelJob`: on a lost lock it emits that
 * event and an `error`, and the attempt ran on while another worker, given
 * the job by the stall check, ran it too. One listener per worker, not per
 * job (a worker with concurrency 100 would pass Node's listener warning),
 * removed when the worker closes. Returns the
 * undo; a job not fetched by a Worker (`job.queue` is the Worker for those)
 * has nothing to watch.
 */
export function onLockLost(job: Job, listener: () => void): () => void {
  const worker = workerOf(job)
  const id = job.id
  if (worker === undefined || id === undefined) return () => {}
  // Closing (a force close emits 'closed' without waiting for the jobs it
  // had started): a listener added now would never be released.
  if (worker.closing) return () => {}
  let byJob = watchers.get(worker)
  if (byJob === undefined) {
    const jobs = new Map<string, Set<() => void>>()
    byJob = jobs
    const failed = (ids: unknown) => {
      if (!Array.isArray(ids)) return
      for (const lost of ids) for (const call of jobs.get(String(lost)) ?? []) call()
    }
    const release = () => {
      worker.off('lockRenewalFailed', failed)
      worker.off('closed', release)
      watchers.delete(worker)
    }
    worker.on('lockRenewalFailed', failed)
    worker.on('closed', release)
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
