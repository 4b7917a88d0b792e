import type { Job } from 'bullmq'
import { expect, it } from 'vitest'
import { onLockLost } from '../src/onLockLost.js'

// A force close (`worker.close(true)`) emits 'closed' without waiting for the
// jobs it had started: an attempt that reached onLockLost after it added a
// listener pair to the worker that nothing would ever release.

function fakeWorker(closing: unknown) {
  const listeners: string[] = []
  return {
    listeners,
    closing,
    on(event: string) {
      listeners.push(event)
    },
    off(event: string) {
      listeners.splice(listeners.indexOf(event), 1)
    },
    cancelJob() {},
  }
}

it('a worker already closing gets no listener for a job it started', () => {
  const worker = fakeWorker(Promise.resolve())
  const undo = onLockLost({ id: '1', queue: worker } as unknown as Job, () => {})
  expect(worker.listeners).toEqual([])
  undo()
})

it('a worker not closing is watched: one lockRenewalFailed and one closed listener', () => {
  const worker = fakeWorker(undefined)
  const undo = onLockLost({ id: '1', queue: worker } as unknown as Job, () => {})
  expect(worker.listeners.sort()).toEqual(['closed', 'lockRenewalFailed'])
  undo()
})
