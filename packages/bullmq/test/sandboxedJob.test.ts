import { Job } from 'bullmq'
import { expect, it } from 'vitest'
import { withDeadline } from '../src/index.js'

/** The copy of a job a sandboxed processor gets: a deadline, no queue backend. */
function sandboxedCopy(): Job {
  return {
    id: '1',
    name: 'j',
    data: {},
    attemptsMade: 0,
    attemptsStarted: 1,
    queueName: 'q',
    queueQualifiedName: 'bull:q',
    queue: { opts: {} },
    opts: { attempts: 3, hourglass: { expiresAtMs: Date.now() + 60_000, budgetMs: 60_000 } },
  } as unknown as Job
}

// A sandboxed processor (a processor file BullMQ runs in a child process or a
// worker thread) gets a copy of the job without its queue's backend: every
// job with a deadline failed with "needs a Redis-backed queue", which sent
// its author to check a queue that was Redis-backed all along.
it('a job with a deadline but no backend (a sandboxed copy) is refused naming the sandbox', async () => {
  const processor = withDeadline(async () => 'ran')
  await expect(processor(sandboxedCopy(), 'token')).rejects.toThrow(/sandboxed processor/)
})

// The refusal is the same on every attempt: BullMQ ran each of `attempts`
// again after its back-off (minutes, exponential), to fail the same way.
// Named as BullMQ names a failure it does not retry.
it('the sandbox refusal is one BullMQ does not retry', async () => {
  const processor = withDeadline(async () => 'ran')
  const job = sandboxedCopy()
  const error = await processor(job, 'token').catch((e: unknown) => e)
  expect(error).toBeInstanceOf(TypeError)
  // BullMQ's own judgement (a private method: the one its worker asks).
  const shouldRetryJob = (
    Job.prototype as unknown as { shouldRetryJob(this: Job, error: Error): Promise<unknown> }
  ).shouldRetryJob
  expect(await shouldRetryJob.call(job, error as Error)).toEqual([false, 0])
})
