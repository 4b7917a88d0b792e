import {
  ClientClosedError,
  currentDeadline,
  Deadline,
  isDeadlineExceeded,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { Queue } from 'bullmq'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished, signal } from './support/observe.js'
import {
  available,
  redisClockPasses,
  redisNowMs,
  storedExpiry,
  useRedisQueues,
} from './support/redisQueues.js'
import { track } from './support/track.js'

const HOUR_MS = 3_600_000

describe.skipIf(!available)('addWithDeadline: the deadline rides with the job', () => {
  const redis = useRedisQueues()

  it('stores the expiry on the Redis server clock: Redis TIME + what is left, read in the same round trip', async () => {
    const { queue } = await redis.queue()
    const client = redis.client()
    // A manual clock does not move: the deadline has exactly 5000 ms left throughout.
    const deadline = Deadline.after(5_000, { clock: new ManualClock() })
    const before = await redisNowMs(client)
    const job = await addWithDeadline(queue, 'send', { to: 'a@b.c' }, { deadline })
    const after = await redisNowMs(client)

    const stored = (await queue.getJob(job.id!))!.opts as { hourglass?: Record<string, unknown> }
    expect(stored.hourglass).toEqual({ expiresAtMs: expect.any(Number), budgetMs: 5_000 })
    const expiresAtMs = stored.hourglass!.expiresAtMs as number
    expect(expiresAtMs).toBeGreaterThanOrEqual(Math.floor(before + 5_000))
    expect(expiresAtMs).toBeLessThanOrEqual(after + 5_000)
  })

  it('takes the current deadline by default, and keeps the other job options', async () => {
    const { queue } = await redis.queue()
    const deadline = Deadline.after(7_000, { clock: new ManualClock() })
    const job = await runWithDeadline(deadline, () =>
      addWithDeadline(queue, 'send', {}, { priority: 3, attempts: 2 }),
    )
    expect(job.opts).toMatchObject({ priority: 3, attempts: 2, hourglass: { budgetMs: 7_000 } })
    expect(currentDeadline()).toBeUndefined()
  })

  it('does not enqueue under a deadline that has already ended: the deadline error, or the cancel reason, is thrown', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const expired = Deadline.after(100, { clock })
    clock.advance(100)
    const rejected = await addWithDeadline(queue, 'late', {}, { deadline: expired }).catch((e) => e)
    expect(isDeadlineExceeded(rejected)).toBe(true)

    const cancelled = Deadline.after(10_000)
    cancelled.cancel(new ClientClosedError())
    await expect(
      addWithDeadline(queue, 'gone', {}, { deadline: cancelled }),
    ).rejects.toBeInstanceOf(ClientClosedError)

    // A deadline with no expiry that was cancelled (its caller left) has ended too.
    const endless = Deadline.never()
    endless.cancel(new ClientClosedError())
    await expect(
      addWithDeadline(queue, 'gone-too', {}, { deadline: endless }),
    ).rejects.toBeInstanceOf(ClientClosedError)
    expect(await queue.count()).toBe(0)
  })

  it('a Redis that does not answer the clock reading does not hold the producer past its deadline', async () => {
    const { queue } = await redis.queue()
    const other = redis.client()
    await other.ping()
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    // Redis hangs: connected, "ready", answering nothing.
    redis.redis.freeze()
    const add = track(addWithDeadline(queue, 'paused', {}, { deadline }))
    clock.advance(1000)
    // Settled at its deadline (a turn of the loop later), while Redis still answers nothing.
    await new Promise((resolve) => setImmediate(resolve))
    expect(isDeadlineExceeded(add.outcome)).toBe(true)
    // Redis answers again (the clock reading it held too): still no job added.
    redis.redis.thaw()
    await other.ping()
    expect(await queue.count()).toBe(0)
  })

  it('a Redis that stops answering after the clock reading does not hold the producer past its deadline either; the job that lands late never runs', async () => {
    const { queue, events, name } = await redis.queue()
    const other = redis.client()
    await other.ping()
    const clock = new ManualClock()
    const deadline = Deadline.after(300, { clock })
    // Redis hangs between the clock reading and the add: the add is sent, its reply never comes.
    const frozen = signal()
    const freeze = () => {
      redis.redis.freeze()
      frozen.resolve()
    }
    bullmqChannels.enqueue.subscribe(freeze)
    onTestFinished(() => bullmqChannels.enqueue.unsubscribe(freeze))
    const add = track(addWithDeadline(queue, 'paused-add', {}, { deadline }))
    // The enqueue message is published after the clock reading, right before the add is sent.
    await frozen.promise
    clock.advance(300)
    await new Promise((resolve) => setImmediate(resolve))
    expect(isDeadlineExceeded(add.outcome)).toBe(true)
    // Redis answers again: the add it held lands, with an expiry no later than the producer's deadline.
    redis.redis.thaw()
    await vi.waitFor(async () => expect(await queue.count()).toBe(1), { timeout: 10_000 })
    const [late] = await queue.getJobs(['wait'])
    await redisClockPasses(other, storedExpiry(late!))
    const ran = vi.fn()
    redis.worker(name, withDeadline(ran))
    const outcome = await finished(late!, events, queue)
    expect(ran).not.toHaveBeenCalled()
    expect(outcome.failedReason).toMatch(/^deadline_exceeded: /)
  })

  it('a deadline cancelled while the job is being added (the client left): the add is awaited and the job returned, as it is in Redis and will run', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const deadline = Deadline.after(10_000, { clock })
    // The cancel comes right after the add is sent (the enqueue message is published just before it).
    const cancel = () => setImmediate(() => deadline.cancel(new ClientClosedError()))
    bullmqChannels.enqueue.subscribe(cancel)
    onTestFinished(() => bullmqChannels.enqueue.unsubscribe(cancel))
    const job = await addWithDeadline(queue, 'charge', {}, { deadline })
    expect(deadline.done && !deadline.expired).toBe(true)
    expect(await queue.count()).toBe(1)
    expect((await queue.getJobs(['wait']))[0]?.id).toBe(job.id)
    // Nothing of the bound is left armed on the caller's clock.
    expect(clock.pendingTimers).toBe(0)
  })

  it('refuses a job whose delay outlasts its deadline (it could never run), before anything reaches Redis; a delay that fits, a dark-mode deadline or a deadline of its own are added', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    // A request handler with 30 s left schedules a reminder for an hour later, under the request's deadline.
    const request = Deadline.after(30_000, { clock })
    const refused = await runWithDeadline(request, () =>
      addWithDeadline(queue, 'remind', {}, { delay: HOUR_MS }),
    ).catch((e) => e)
    expect(isDeadlineExceeded(refused)).toBe(true)
    expect(refused.message).toMatch(/delay of 3600000 ms.*30000 ms left.*could never run/)
    expect(await queue.count()).toBe(0)
    // A delay within what is left: the job starts with the rest.
    const fits = await addWithDeadline(queue, 'soon', {}, { deadline: request, delay: 10_000 })
    expect(fits.opts).toMatchObject({ delay: 10_000, hourglass: { budgetMs: 30_000 } })
    // Dark mode never refuses: the worker reports what it would have done.
    const observed = Deadline.after(30_000, { clock, observe: true })
    await addWithDeadline(queue, 'dark', {}, { deadline: observed, delay: HOUR_MS })
    // The fix the message suggests: a deadline of its own.
    await addWithDeadline(
      queue,
      'own',
      {},
      { deadline: Deadline.after(2 * HOUR_MS, { clock }), delay: HOUR_MS },
    )
    expect(await queue.count()).toBe(3)
  })

  it("refuses a job whose queue's defaultJobOptions.delay outlasts its deadline, as BullMQ would apply it; the job's own delay still overrides the default", async () => {
    const name = `defaults-${process.pid}`
    const queue = new Queue(name, {
      connection: redis.connection(),
      defaultJobOptions: { delay: HOUR_MS },
    })
    onTestFinished(() => queue.close())
    const request = Deadline.after(30_000, { clock: new ManualClock() })
    const refused = await addWithDeadline(queue, 'remind', {}, { deadline: request }).catch(
      (e) => e,
    )
    expect(refused).toMatchObject({
      message: expect.stringMatching(/delay of 3600000 ms.*30000 ms left.*could never run/),
    })
    expect(await queue.count()).toBe(0)
    // The job's own delay wins over the queue's, as BullMQ merges them.
    const own = await addWithDeadline(queue, 'now', {}, { deadline: request, delay: 0 })
    expect(own.opts).toMatchObject({ delay: 0, hourglass: { budgetMs: 30_000 } })
  })

  it('a refused job is published on refuse (why, its delay, what it would have had), as a worker publishes expire for one that came too late; an added job is not', async () => {
    const { queue } = await redis.queue()
    const refusals = collect(bullmqChannels.refuse)
    const clock = new ManualClock()
    const request = Deadline.after(30_000, { clock })
    const late = await addWithDeadline(
      queue,
      'remind',
      {},
      { deadline: request, delay: HOUR_MS },
    ).catch((e) => e)
    expect(isDeadlineExceeded(late)).toBe(true)
    expect(refusals).toEqual([
      {
        queue: queue.name,
        name: 'remind',
        deadline: request,
        reason: 'delay',
        delayMs: HOUR_MS,
        remainingMs: 30_000,
        error: late,
        outcome: 'refused',
      },
    ])
    // Cut to maxMs: what it would have been given.
    await addWithDeadline(
      queue,
      'remind',
      {},
      { deadline: request, delay: 20_000, maxMs: 10_000 },
    ).catch(() => {})
    expect(refusals[1]).toMatchObject({ reason: 'delay', delayMs: 20_000, remainingMs: 10_000 })
    // A deadline that has ended: nothing is added, and that is published too.
    const gone = Deadline.after(10_000, { clock })
    const left = new ClientClosedError()
    gone.cancel(left)
    await expect(addWithDeadline(queue, 'gone', {}, { deadline: gone })).rejects.toBe(left)
    expect(refusals[2]).toEqual({
      queue: queue.name,
      name: 'gone',
      deadline: gone,
      reason: 'ended',
      delayMs: undefined,
      remainingMs: 0,
      error: left,
      outcome: 'refused',
    })
    // Added: nothing on refuse.
    await addWithDeadline(queue, 'soon', {}, { deadline: request, delay: 10_000 })
    expect(refusals).toHaveLength(3)
    // Added in dark mode, though enforcement would refuse it: published as
    // observed, never as a refusal (the job was added).
    const dark = await addWithDeadline(
      queue,
      'dark',
      {},
      {
        deadline: Deadline.after(30_000, { clock, observe: true }),
        delay: HOUR_MS,
      },
    )
    expect(refusals.slice(3)).toEqual([
      expect.objectContaining({
        name: 'dark',
        reason: 'delay',
        outcome: 'observed',
        jobId: dark.id,
      }),
    ])
    expect(refusals.filter((m) => m.outcome === 'refused')).toHaveLength(3)
    expect(await queue.count()).toBe(2)
  })

  it('dark mode: an add enforcement would refuse is added all the same, and published on refuse as observed (why, and the id of the job added), with what enforcement would have thrown', async () => {
    const { queue } = await redis.queue()
    const refusals = collect(bullmqChannels.refuse)
    const clock = new ManualClock()
    // A delay past the deadline.
    const dark = Deadline.after(30_000, { clock, observe: true })
    const delayed = await addWithDeadline(queue, 'remind', {}, { deadline: dark, delay: HOUR_MS })
    expect(delayed.opts).toMatchObject({
      delay: HOUR_MS,
      hourglass: { budgetMs: 30_000, observe: true },
    })
    // What enforce mode publishes for the same add, with the same reason text.
    const enforced = Deadline.after(30_000, { clock })
    const refused = await addWithDeadline(
      queue,
      'remind',
      {},
      { deadline: enforced, delay: HOUR_MS },
    ).catch((e) => e)
    expect(isDeadlineExceeded(refused)).toBe(true)
    expect(refusals).toEqual([
      {
        queue: queue.name,
        name: 'remind',
        deadline: dark,
        reason: 'delay',
        delayMs: HOUR_MS,
        remainingMs: 30_000,
        error: expect.objectContaining({ code: 'DEADLINE_EXCEEDED', message: refused.message }),
        outcome: 'observed',
        jobId: delayed.id,
      },
      {
        queue: queue.name,
        name: 'remind',
        deadline: enforced,
        reason: 'delay',
        delayMs: HOUR_MS,
        remainingMs: 30_000,
        error: refused,
        outcome: 'refused',
      },
    ])

    // A deadline that had already ended (its time passed, only observed).
    const pastClock = new ManualClock()
    const past = Deadline.after(100, { clock: pastClock, observe: true })
    const pastEnforced = Deadline.after(100, { clock: pastClock })
    pastClock.advance(100)
    const late = await addWithDeadline(queue, 'late', {}, { deadline: past })
    expect(late.opts).toMatchObject({ hourglass: { budgetMs: 0, observe: true } })
    const lateRefused = await addWithDeadline(queue, 'late', {}, { deadline: pastEnforced }).catch(
      (e) => e,
    )
    expect(isDeadlineExceeded(lateRefused)).toBe(true)
    expect(refusals.slice(2)).toEqual([
      {
        queue: queue.name,
        name: 'late',
        deadline: past,
        reason: 'ended',
        delayMs: undefined,
        remainingMs: 0,
        error: expect.objectContaining({ code: 'DEADLINE_EXCEEDED', message: lateRefused.message }),
        outcome: 'observed',
        jobId: late.id,
      },
      expect.objectContaining({ deadline: pastEnforced, reason: 'ended', outcome: 'refused' }),
    ])

    // A cancel (the caller left) is refused in every mode, dark mode too:
    // as deadline() stops the work for a client gone, whatever the mode.
    // With no expiry, and with one (refused before Redis is read).
    for (const endless of [
      Deadline.never({ observe: true }),
      Deadline.after(30_000, { clock, observe: true }),
    ]) {
      const left = new ClientClosedError()
      endless.cancel(left)
      await expect(addWithDeadline(queue, 'gone', {}, { deadline: endless })).rejects.toBe(left)
    }
    expect(refusals.slice(4)).toEqual([
      expect.objectContaining({ name: 'gone', reason: 'ended', outcome: 'refused' }),
      expect.objectContaining({ name: 'gone', reason: 'ended', outcome: 'refused' }),
    ])

    // Adds that fit publish nothing, in dark mode as in enforce mode.
    await addWithDeadline(queue, 'soon', {}, { deadline: dark, delay: 10_000 })
    await addWithDeadline(queue, 'now', {}, { deadline: dark })
    expect(refusals).toHaveLength(6)
    // Every dark-mode add not cancelled is in Redis; no enforced one is.
    expect(await queue.count()).toBe(4)
  })

  it('the same jobId added twice at once under one deadline: exactly one of the two is reported the duplicate (they share a clock reading, so expiry and budget cannot tell them apart)', async () => {
    const { queue } = await redis.queue()
    const adds = collect(bullmqChannels.add)
    for (let i = 0; i < 5; i++) {
      const deadline = Deadline.after(30_000, { clock: new ManualClock() })
      await Promise.all([
        addWithDeadline(queue, 'charge', { n: 1 }, { jobId: `twice-${i}`, deadline }),
        addWithDeadline(queue, 'charge', { n: 2 }, { jobId: `twice-${i}`, deadline }),
      ])
      const pair = adds.splice(0)
      expect(pair.map((m) => m.jobId)).toEqual([`twice-${i}`, `twice-${i}`])
      expect(pair.filter((m) => m.duplicate).length, `pair ${i}`).toBe(1)
    }
    expect(await queue.count()).toBe(5)
  })

  it('a jobId BullMQ already has: the add message reports the job BullMQ kept (its budget and expiry, duplicate: true), not the budget this call would have given', async () => {
    const { queue } = await redis.queue()
    const adds = collect(bullmqChannels.add)
    const clock = new ManualClock()
    const first = await addWithDeadline(
      queue,
      'charge',
      { n: 1 },
      {
        jobId: 'order-7',
        deadline: Deadline.after(30_000, { clock }),
      },
    )
    expect(adds[0]).toMatchObject({ jobId: 'order-7', budgetMs: 30_000 })
    const keptExpiry = adds[0]!.expiresAtMs
    // The same id again, under a shorter deadline: BullMQ keeps the first job and returns it.
    const again = await addWithDeadline(
      queue,
      'charge',
      { n: 2 },
      {
        jobId: 'order-7',
        deadline: Deadline.after(5_000, { clock }),
      },
    )
    expect(again.id).toBe(first.id)
    const stored = (await queue.getJob('order-7'))!.opts as { hourglass?: { budgetMs: number } }
    expect(stored.hourglass?.budgetMs).toBe(30_000)
    expect(adds[1]).toMatchObject({
      jobId: 'order-7',
      budgetMs: 30_000,
      expiresAtMs: keptExpiry,
      clamped: false,
      observe: false,
      duplicate: true,
    })
    expect(adds[0]!.duplicate).toBe(false)
    expect(adds[1]!.remainingMs).toBeGreaterThan(5_000)
    expect(adds[1]!.remainingMs).toBeLessThanOrEqual(30_000)
    // Kept from a plain queue.add: no deadline at all.
    await queue.add('charge', {}, { jobId: 'order-8' })
    await addWithDeadline(
      queue,
      'charge',
      {},
      {
        jobId: 'order-8',
        deadline: Deadline.after(5_000, { clock }),
      },
    )
    expect(adds[2]).toMatchObject({
      jobId: 'order-8',
      budgetMs: undefined,
      expiresAtMs: undefined,
      remainingMs: Number.POSITIVE_INFINITY,
      duplicate: true,
    })
    expect(await queue.count()).toBe(2)
  })

  it.each([
    ['an hour behind', -HOUR_MS],
    ['an hour ahead', HOUR_MS],
  ])(
    'a producer whose wall clock is %s stores the same expiry: skew cannot lengthen or shorten the job',
    async (_label, skewMs) => {
      const { queue } = await redis.queue()
      const client = redis.client()
      const deadline = Deadline.after(5_000, { clock: new ManualClock() })
      const before = await redisNowMs(client)
      const realNow = Date.now.bind(Date)
      const skewed = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs)
      const job = await addWithDeadline(queue, 'send', {}, { deadline }).finally(() =>
        skewed.mockRestore(),
      )
      const after = await redisNowMs(client)
      const { expiresAtMs } = (job.opts as unknown as { hourglass: { expiresAtMs: number } })
        .hourglass
      expect(expiresAtMs).toBeGreaterThanOrEqual(Math.floor(before + 5_000))
      expect(expiresAtMs).toBeLessThanOrEqual(after + 5_000)
    },
  )

  it('a worker whose wall clock is an hour ahead still gives a job the time it has left', async () => {
    const { queue, events, name } = await redis.queue()
    const started = signal<number>()
    redis.worker(
      name,
      withDeadline(async () => {
        started.resolve(currentDeadline()!.remaining())
      }),
    )
    const realNow = Date.now.bind(Date)
    const skewed = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + HOUR_MS)
    try {
      // Added with exactly 60 s (a manual clock does not move while it is added).
      const deadline = Deadline.after(60_000, { clock: new ManualClock() })
      const job = await addWithDeadline(queue, 'send', {}, { deadline })
      const remaining = await started.promise
      // Read on the hour-ahead wall clock, the job would have expired an hour
      // ago; it has what is left on the Redis clock (seconds of margin for a loaded box).
      expect(remaining).toBeGreaterThan(30_000)
      expect(remaining).toBeLessThanOrEqual(60_000)
      expect(await finished(job, events, queue)).toMatchObject({ ok: true })
    } finally {
      skewed.mockRestore()
    }
  })
})
