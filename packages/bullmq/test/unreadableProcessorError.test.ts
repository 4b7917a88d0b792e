import { once } from 'node:events'
import { currentDeadline, Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { revokedProxy, unreadableMessageError } from '../../../test/support/unreadableValues.js'
import { addWithDeadline, JobDeadlineExceededError, withDeadline } from '../src/index.js'
import { finished, signal } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// A processor rejects with anything. Where its deadline ended the attempt,
// the worker fails the job with JobDeadlineExceededError, whose message
// quoted what was thrown: an Error whose `message` getter throws threw out of
// that constructor, and the job failed with the getter's error instead of
// deadline_exceeded — not an UnrecoverableError, so BullMQ retried it.

const unreadable = unreadableMessageError

describe('JobDeadlineExceededError with a cause whose message cannot be read', () => {
  it.each([
    ['an Error whose message getter throws', unreadable],
    ['a revoked Proxy', revokedProxy],
  ])('%s: made, never thrown, and its message says the deadline stopped it', (_name, make) => {
    const details = { jobId: '1', queue: 'q', budgetMs: 100, elapsedMs: 100 }
    const running = new JobDeadlineExceededError({ ...details, stage: 'running', cause: make() })
    expect(running.message).toMatch(
      /^deadline_exceeded: job 1 of q was stopped by its deadline \(added with 100 ms left\)/,
    )
    const retry = new JobDeadlineExceededError({ ...details, stage: 'retry', cause: make() })
    expect(retry.message).toMatch(/^deadline_exceeded: job 1 of q failed with 0 ms left/)
  })
})

describe.skipIf(!available)(
  'withDeadline: an attempt its deadline ended that rejects with an Error whose message cannot be read',
  () => {
    const redis = useRedisQueues()

    it('fails the job with deadline_exceeded, not retried', async () => {
      const { queue, events, name } = await redis.queue()
      const clock = new ManualClock()
      const started = signal<Deadline | undefined>()
      redis.worker(
        name,
        withDeadline(
          async (_job, _token, jobSignal) => {
            started.resolve(currentDeadline())
            await once(jobSignal!, 'abort')
            throw unreadable()
          },
          { clock },
        ),
      )
      const job = await addWithDeadline(
        queue,
        'stopped',
        {},
        { deadline: Deadline.after(60_000, { clock: new ManualClock() }), attempts: 3 },
      )
      const deadline = await started.promise
      clock.advance(deadline!.remaining() + 1)

      const result = await finished(job, events, queue)
      expect(result.state).toBe('failed')
      expect(result.failedReason).toMatch(
        /^deadline_exceeded: job \d+ .* was stopped by its deadline \(added with \d+ ms left\): an object$/,
      )
      expect(result.attemptsMade).toBe(1)
    })
  },
)
