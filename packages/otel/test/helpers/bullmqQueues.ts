import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { type Processor, Queue, QueueEvents, Worker } from 'bullmq'
import { afterAll, beforeAll } from 'vitest'

/**
 * A real redis-server for one test file (started before its tests, stopped
 * after them) and the BullMQ queues and workers its tests open. Whatever a
 * test opened is closed by `closeAll()` — call it first in the file's
 * `afterEach`, before the instrumentation and providers are stopped, so no
 * job event reaches a subscription that is gone.
 */
export function useBullmqQueues(prefix: string) {
  const available = redisAvailable()
  let redis: RedisServer | undefined
  let counter = 0
  const closers: Array<() => Promise<unknown>> = []
  beforeAll(async () => {
    if (available) redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  const connection = () => ({ host: '127.0.0.1', port: redis!.port, maxRetriesPerRequest: null })
  return {
    available,
    /** The redis-server's port (once the file's tests have started). */
    port: () => redis!.port,
    /** Closed by `closeAll()`, last opened first. */
    onClose(...close: Array<() => Promise<unknown>>): void {
      closers.push(...close)
    },
    async closeAll(): Promise<void> {
      for (const close of closers.splice(0).reverse()) await close()
    },
    /** A new queue of its own name, and its events, both ready. */
    async queue(): Promise<{ queue: Queue; events: QueueEvents; name: string }> {
      const name = `${prefix}${++counter}-${process.pid}`
      const q = new Queue(name, { connection: connection() })
      const events = new QueueEvents(name, { connection: connection() })
      closers.push(
        () => q.close(),
        () => events.close(),
      )
      await Promise.all([q.waitUntilReady(), events.waitUntilReady()])
      return { queue: q, events, name }
    },
    worker(
      name: string,
      processor: Processor,
      autorun = true,
      options: { lockDuration?: number } = {},
    ): Worker {
      const w = new Worker(name, processor, { ...options, connection: connection(), autorun })
      w.on('error', () => {})
      closers.push(() => w.close(true))
      return w
    },
  }
}
