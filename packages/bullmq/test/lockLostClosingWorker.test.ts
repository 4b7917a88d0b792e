import { EventEmitter } from 'node:events'
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

// BullMQ 6 sets `closed` just before it emits 'closed': a worker that says
// it has closed renews no lock and records nothing for a job it starts now.
function emittingWorker(state: { closing?: unknown; closed?: unknown }) {
  const events = new EventEmitter()
  return Object.assign(events, state, { cancelJob() {} })
}

it('a worker closed already tells the attempt at once (worker_closed) and gets no listener', () => {
  const worker = emittingWorker({ closing: Promise.resolve(), closed: true })
  const told: string[] = []
  const undo = onLockLost({ id: '1', queue: worker } as unknown as Job, (why) => told.push(why))
  expect(told).toEqual(['worker_closed'])
  expect(worker.eventNames()).toEqual([])
  undo()
})

it("a worker closing but not yet closed is watched: its 'closed' tells the running attempts and releases the listeners", () => {
  const worker = emittingWorker({ closing: Promise.resolve(), closed: false })
  const told: string[] = []
  onLockLost({ id: '1', queue: worker } as unknown as Job, (why) => told.push(`1 ${why}`))
  const undo2 = onLockLost({ id: '2', queue: worker } as unknown as Job, (why) =>
    told.push(`2 ${why}`),
  )
  // Ended before the close: not told.
  undo2()
  expect(worker.eventNames().sort()).toEqual(['closed', 'lockRenewalFailed'])
  worker.emit('closed')
  expect(told).toEqual(['1 worker_closed'])
  expect(worker.eventNames()).toEqual([])
})
