import { Deadline, ManualClock } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { guardDelay } from '../src/guardDelay.js'

describe('guardDelay', () => {
  it('a move that fails after a refusal (a lost lock) moved nothing: the refusal stands', async () => {
    const job = {
      id: '1',
      queueName: 'q',
      moveToDelayed: async () => {
        throw new Error('Missing lock for job 1')
      },
    } as unknown as Job
    const deadline = Deadline.after(10_000, { clock: new ManualClock() })
    const guard = guardDelay(job, deadline, {
      budgetMs: 10_000,
      budgetRecorded: true,
      minBudgetMs: 0,
    })
    await expect(job.moveToDelayed(Date.now() + 60_000)).rejects.toThrow('it was not moved')
    const refused = guard.refusal
    expect(refused).toBeDefined()
    // Accepted, and then failed by BullMQ: the job is still active.
    await expect(job.moveToDelayed(Date.now() + 10)).rejects.toThrow('Missing lock')
    expect(guard.refusal).toBe(refused)
    guard.undo()
  })

  it('a moveToWaitingChildren that moved nothing (no child pending) gives the refusal back; a moveToWait, which moves the job, forgets it', async () => {
    const job = {
      id: '1',
      queueName: 'q',
      moveToDelayed: async () => {},
      moveToWaitingChildren: async () => false,
      moveToWait: async () => 0,
    } as unknown as Job
    const own = { ...job }
    const deadline = Deadline.after(10_000, { clock: new ManualClock() })
    const guard = guardDelay(job, deadline, {
      budgetMs: 10_000,
      budgetRecorded: true,
      minBudgetMs: 0,
    })
    await job.moveToDelayed(Date.now() + 60_000).catch(() => {})
    const refused = guard.refusal
    expect(refused).toBeDefined()
    expect(await job.moveToWaitingChildren('token')).toBe(false)
    expect(guard.refusal).toBe(refused)
    await job.moveToWait('token')
    expect(guard.refusal).toBeUndefined()
    guard.undo()
    expect(job).toEqual(own)
  })
})
