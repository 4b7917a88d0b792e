import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisClient } from '../../src/redisClient.js'

const available = redisAvailable()

/** Blocks the loop for `ms` of real time, as a CPU-bound request on a loaded machine does. */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

/**
 * Redis answers in a millisecond while this process's loop is blocked past
 * `redis.commandTimeoutMs`. When the loop comes back, Node runs the due
 * timers before it reads the socket: with ioredis's own `commandTimeout` at
 * that value, the command failed "Command timed out" though its answer was
 * in, and the limits fell back to each instance's share. The gateway's own
 * bounds read the socket first (core's outcomeWithin); ioredis's is only
 * what drops a command from its queue, set well past them.
 */
describe.skipIf(!available)("the gateway's Redis client after a blocked loop", () => {
  let redis: RedisServer
  let client: Redis
  beforeAll(async () => {
    redis = await startRedis()
    client = createRedisClient({ url: redis.url, keyPrefix: 't', commandTimeoutMs: 100 }, () => {})
    await new Promise<void>((resolve) => client.once('ready', () => resolve()))
  })
  afterAll(async () => {
    client.disconnect()
    await redis.stop()
  })

  it('takes an answer that came in while the loop was blocked past commandTimeoutMs', async () => {
    const answered = client.eval('return 1', 0)
    block(400)
    await expect(answered).resolves.toBe(1)
  })
})
