import {
  coreChannels,
  Deadline,
  type DeadlineCancelMessage,
  type DeadlineCreateMessage,
  ManualClock,
} from '@hourglass/core'
import { describe, expect, it, onTestFinished } from 'vitest'
import { addWithDeadline } from '../src/index.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// The wait for the add's reply was bounded by a Deadline made for it, which
// core publishes as any deadline: a `hourglass:deadline:create` and, once
// the add was in, a `hourglass:deadline:cancel` (an AbortError) for every
// job added — a subscriber counting cancels (callers that left) counted one
// per job enqueued. A create subscriber that sheds new deadlines (a load
// shedder) cancelled it: the add rejected with the shed's reason while the
// job went on into Redis and ran — a producer that retried added it twice.
describe.skipIf(!available)('addWithDeadline makes no deadline of its own', () => {
  const redis = useRedisQueues()

  function watch<T>(channel: {
    subscribe(fn: (message: T) => void): void
    unsubscribe(fn: (message: T) => void): void
  }): T[] {
    const seen: T[] = []
    const listener = (message: T) => {
      seen.push(message)
    }
    channel.subscribe(listener)
    onTestFinished(() => channel.unsubscribe(listener))
    return seen
  }

  it('publishes no deadline create or cancel: the caller’s deadline is the only one', async () => {
    const { queue } = await redis.queue()
    const caller = Deadline.after(60_000, { clock: new ManualClock() })
    const creates = watch<DeadlineCreateMessage>(coreChannels.deadlineCreate)
    const cancels = watch<DeadlineCancelMessage>(coreChannels.deadlineCancel)
    await addWithDeadline(queue, 'a', {}, { deadline: caller })
    await addWithDeadline(queue, 'b', {}, { deadline: caller })
    expect(await queue.count()).toBe(2)
    expect(creates).toEqual([])
    expect(cancels).toEqual([])
  })

  it('an add that went through is returned, whatever a create subscriber does to new deadlines (a load shedder)', async () => {
    const { queue } = await redis.queue()
    const caller = Deadline.after(60_000, { clock: new ManualClock() })
    const shed = (message: DeadlineCreateMessage) => message.deadline.cancel(new Error('shed'))
    coreChannels.deadlineCreate.subscribe(shed)
    onTestFinished(() => coreChannels.deadlineCreate.unsubscribe(shed))
    const job = await addWithDeadline(queue, 'charge', {}, { deadline: caller })
    // Told the truth: the job it was told of is the one in Redis, once.
    expect((await queue.getJobs(['wait'])).map((j) => j.id)).toEqual([job.id])
  })
})
