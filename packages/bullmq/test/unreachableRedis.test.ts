import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { closedPort } from '@hourglass/testkit'
import { Queue } from 'bullmq'
import { afterEach, expect, it } from 'vitest'
import { addWithDeadline } from '../src/index.js'
import { track } from './support/track.js'

// A service that starts while Redis is down (or a queue made per request)
// has a queue that has never connected: BullMQ hands out its client only once
// connected, which with `maxRetriesPerRequest: null` is never. Getting that
// client is part of the clock reading, so it too must end at the deadline —
// otherwise the producer waits past it for as long as Redis stays away.

const queues: Queue[] = []
afterEach(async () => {
  for (const queue of queues.splice(0)) await queue.close().catch(() => {})
})

it('a queue that has never reached Redis does not hold the producer past its deadline', async () => {
  const connection = { host: '127.0.0.1', port: await closedPort(), maxRetriesPerRequest: null }
  const queue = new Queue('never-connected', { connection })
  queue.on('error', () => {}) // ioredis reports each reconnect attempt
  queues.push(queue)
  const clock = new ManualClock()
  const deadline = Deadline.after(1000, { clock })
  const add = track(addWithDeadline(queue, 'job', {}, { deadline }))
  clock.advance(1000)
  // Settled at its deadline (a turn of the loop later), with Redis still unreachable.
  await new Promise((resolve) => setImmediate(resolve))
  expect(isDeadlineExceeded(add.outcome)).toBe(true)
})
