import {
  Deadline,
  DeadlineExceededError,
  isExpiryOf,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import {
  addWithDeadline,
  fromJobError,
  isJobDeadlineExceeded,
  JobDeadlineExceededError,
  withDeadline,
} from '../src/index.js'
import { finished } from './support/observe.js'
import { available, redisClockPasses, storedExpiry, useRedisQueues } from './support/redisQueues.js'

// A budget on trial: an observe-only child of an enforcing deadline,
// `req.deadline.child(100, { observe: true })` inside an enforced request
// (core's README). It bounds nothing by itself; the request above it still
// enforces, and core's `boundingDeadline` is the rule fetch and the gRPC
// client refuse and send by. A job added under one was stored as a dark-mode
// job (`observe: true`, the trial's 100 ms): no worker ever enforced it — not
// at the trial's time, and not at the request's either, which it would have
// been without the trial — and a delay past the request's deadline was added
// to run unbounded later. The producer's deadlines are on a ManualClock, so
// the budgets stored are exactly the ones given; the Redis clock is waited
// on, never slept for.

type Stored = { budgetMs: number; expiresAtMs: number; observe?: true }
const stored = (job: { opts: unknown }) => (job.opts as { hourglass: Stored }).hourglass

describe.skipIf(!available)('addWithDeadline under a budget on trial', () => {
  const redis = useRedisQueues()

  it('the job takes the enforcing deadline above the trial: its budget, enforced', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const request = Deadline.after(60_000, { clock })
    const trial = request.child(100, { observe: true })

    const job = await runWithDeadline(trial, () => addWithDeadline(queue, 'step', {}))

    const hourglass = stored(job)
    expect(hourglass.budgetMs).toBe(60_000)
    expect(hourglass.observe).toBeUndefined()
  })

  it("a worker fails it unrun once the request's deadline has passed (it was run in dark mode)", async () => {
    const { queue, events, name } = await redis.queue()
    const clock = new ManualClock()
    const request = Deadline.after(50, { clock })
    const trial = request.child(20, { observe: true })
    const job = await runWithDeadline(trial, () => addWithDeadline(queue, 'step', {}))
    await redisClockPasses(redis.client(), storedExpiry(job))

    let ran = false
    const processor = withDeadline(async () => {
      ran = true
      return 'ran'
    })
    redis.worker(name, processor)

    const outcome = await finished(job, events, queue)
    expect(outcome.state).toBe('failed')
    expect(outcome.failedReason).toMatch(
      /^deadline_exceeded: .* after its deadline \(added with 50 ms left\); not run$/,
    )
    expect(ran).toBe(false)
    expect(processor.counts.expired).toBe(1)
  })

  it("a delay past the request's deadline is refused, nothing added; one past the trial's alone is added", async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const trial = request.child(100, { observe: true })

    await expect(
      runWithDeadline(trial, () => addWithDeadline(queue, 'later', {}, { delay: 5000 })),
    ).rejects.toThrow(/has a delay of 5000 ms but only 1000 ms left/)
    expect(await queue.getJobCounts('delayed', 'wait')).toEqual({ delayed: 0, wait: 0 })

    const fits = await runWithDeadline(trial, () =>
      addWithDeadline(queue, 'soon', {}, { delay: 500 }),
    )
    expect(stored(fits)).toMatchObject({ budgetMs: 1000 })
    expect(stored(fits).observe).toBeUndefined()
  })

  it('dark mode throughout (nothing enforcing above): stored observe-only, as before', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const dark = Deadline.after(60_000, { clock, observe: true })
    const trial = dark.child(100, { observe: true })

    const job = await runWithDeadline(trial, () => addWithDeadline(queue, 'step', {}))

    expect(stored(job)).toMatchObject({ budgetMs: 100, observe: true })
  })

  it('a trial cancelled on its own is refused with its reason, as before', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const request = Deadline.after(60_000, { clock })
    const trial = request.child(100, { observe: true })
    const reason = new Error('step abandoned')
    trial.cancel(reason)

    await expect(runWithDeadline(trial, () => addWithDeadline(queue, 'step', {}))).rejects.toBe(
      reason,
    )
    expect(await queue.getJobCounts('wait')).toEqual({ wait: 0 })
  })

  it('a trial cancelled while the add reads the Redis clock is refused with its reason, nothing added (review)', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const request = Deadline.after(60_000, { clock })
    const trial = request.child(100, { observe: true })
    const reason = new Error('step abandoned')
    const adding = runWithDeadline(trial, () => addWithDeadline(queue, 'step', {}))
    // The add is waiting on Redis (its clock reading): the step is abandoned.
    trial.cancel(reason)

    await expect(adding).rejects.toBe(reason)
    expect(await queue.getJobCounts('wait')).toEqual({ wait: 0 })
  })

  it('a trial cancelled while Redis hangs ends the add at once, not at the request’s deadline (review)', async () => {
    const { queue } = await redis.queue()
    const other = redis.client()
    await other.ping()
    const clock = new ManualClock()
    const request = Deadline.after(60_000, { clock })
    const trial = request.child(100, { observe: true })
    const reason = new Error('step abandoned')
    // Redis hangs: connected, "ready", answering nothing.
    redis.redis.freeze()
    let outcome: unknown = 'pending'
    runWithDeadline(trial, () => addWithDeadline(queue, 'step', {})).then(
      () => {
        outcome = 'added'
      },
      (error: unknown) => {
        outcome = error
      },
    )
    trial.cancel(reason)
    // A turn of the loop: settled while Redis still answers nothing.
    await new Promise((resolve) => setImmediate(resolve))
    expect(outcome).toBe(reason)
    redis.redis.thaw()
    await other.ping()
    expect(await queue.getJobCounts('wait')).toEqual({ wait: 0 })
  })
})

describe('fromJobError under a budget on trial', () => {
  const refusedRetry = () =>
    new Error(
      new JobDeadlineExceededError({
        stage: 'retry',
        jobId: '7',
        queue: 'reports',
        budgetMs: 3000,
        elapsedMs: 200,
        retryDelayMs: 5000,
      }).message,
    )

  it("past the trial's own time, with the request's time left: an unrelated deadline's, not the request's expiry", () => {
    const clock = new ManualClock()
    const request = Deadline.after(60_000, { clock })
    const trial = request.child(100, { observe: true })
    clock.advance(200) // the trial's time has passed (observed); the request has 59.8 s

    const error = runWithDeadline(trial, () => fromJobError(refusedRetry()))

    expect(isJobDeadlineExceeded(error)).toBe(true)
    // Unmarked, an Express app took it for the request's own: 504
    // x-deadline-expired with 59.8 s of the request left.
    expect(isExpiryOf(error, request)).toBe(false)
  })

  it("once the request's deadline has ended, it is that deadline's expiry", () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const trial = request.child(100, { observe: true })
    clock.advance(1000)

    const error = fromJobError(refusedRetry(), { deadline: trial })

    expect(error).toBeInstanceOf(DeadlineExceededError)
    expect(isExpiryOf(error, request)).toBe(true)
  })
})
