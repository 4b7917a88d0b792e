import type { Job } from 'bullmq'
import { expect, it } from 'vitest'
import { withDeadline } from '../src/index.js'

// A sandboxed processor (a processor file BullMQ runs in a child process or a
// worker thread) gets a copy of the job without its queue's backend: every
// job with a deadline failed with "needs a Redis-backed queue", which sent
// its author to check a queue that was Redis-backed all along.
it('a job with a deadline but no backend (a sandboxed copy) is refused naming the sandbox', async () => {
  const processor = withDeadline(async () => 'ran')
  const job = {
    id: '1',
    name: 'j',
    data: {},
    attemptsMade: 0,
    queueName: 'q',
    queueQualifiedName: 'bull:q',
    opts: { hourglass: { expiresAtMs: Date.now() + 60_000, budgetMs: 60_000 } },
  } as unknown as Job
  await expect(processor(job, 'token')).rejects.toThrow(/sandboxed processor/)
})
