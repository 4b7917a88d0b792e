// proposed: packages/core/test/workerDeadlineHandoff.test.ts
// Pins the README's worker_threads recipe (Context): a job the worker takes
// up after its caller's deadline has passed is over at birth, and errors
// read on the main side as the README says they do.
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { Deadline, DeadlineExceededError, errorCode, isDeadlineExceeded } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// A worker that holds its loop `busyMs` on the first message, then reads the
// second as the README says, and answers whether the deadline it made was over.
const WORKER = `
const { parentPort } = require('node:worker_threads')
import('@hourglass/core').then(({ Deadline }) => {
  parentPort.on('message', (m) => {
    if (m.busyMs) { const end = performance.now() + m.busyMs; while (performance.now() < end); return }
    const ms = m.endsAt - (performance.timeOrigin + performance.now())
    const d = Deadline.after(ms)
    parentPort.postMessage({ expired: d.expired })
    d.dispose()
  })
  parentPort.postMessage('ready')
})
`

describe('a deadline handed to a worker_threads worker', () => {
  it('is over in the worker when the worker takes the job up after the caller\u2019s deadline', async () => {
    const worker = new Worker(WORKER, { eval: true, execArgv: [] })
    try {
      await once(worker, 'message') // ready
      worker.postMessage({ busyMs: 300 }) // the job before ours
      const deadline = Deadline.after(50)
      // The README's recipe: when it ends, on the scale both threads share.
      worker.postMessage({
        endsAt: performance.timeOrigin + performance.now() + deadline.remaining(),
      })
      const [answer] = await once(worker, 'message')
      // With `deadline.remaining()` alone the worker made a 50 ms deadline 250 ms late.
      expect(answer).toEqual({ expired: true })
      deadline.dispose()
    } finally {
      await worker.terminate()
    }
  })

  it('reaches the main thread as the README says: posted, an Error of no code; thrown, its code', async () => {
    const worker = new Worker(
      `import('@hourglass/core').then(({ DeadlineExceededError }) => {
        const e = new DeadlineExceededError({ budgetMs: 100, elapsedMs: 101, slice: 'model' })
        require('node:worker_threads').parentPort.postMessage(e)
        setTimeout(() => { throw e }, 10)
      })`,
      { eval: true, execArgv: [] },
    )
    const [posted] = await once(worker, 'message')
    const [thrown] = await once(worker, 'error')
    expect(posted.name).toBe('Error')
    expect(errorCode(posted)).toBe('Error')
    expect(posted.code).toBeUndefined()
    expect(thrown.name).toBe(DeadlineExceededError.errorName)
    expect(errorCode(thrown)).toBe('DEADLINE_EXCEEDED')
    expect(isDeadlineExceeded(posted) || isDeadlineExceeded(thrown)).toBe(false)
  })
})
