import type { Job } from 'bullmq'

interface JobEvents {
  on(event: 'completed' | 'failed', listener: (job: Job) => void): unknown
  off(event: 'completed' | 'failed', listener: (job: Job) => void): unknown
}

/** Resolves once `count` more jobs have completed or failed (for good or not) on `worker`. */
export function settled(worker: JobEvents, count: number): Promise<void> {
  let seen = 0
  return new Promise<void>((resolve) => {
    const onEnd = () => {
      if (++seen < count) return
      worker.off('completed', onEnd)
      worker.off('failed', onEnd)
      resolve()
    }
    worker.on('completed', onEnd)
    worker.on('failed', onEnd)
  })
}
