import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import {
  type ConnectionOptions,
  type Job,
  type Processor,
  Queue,
  QueueEvents,
  Worker,
  type WorkerOptions,
} from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll } from 'vitest'

export const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the @hourglass/bullmq tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

export interface RedisQueues {
  readonly redis: RedisServer
  /** Connection options for BullMQ (workers need `maxRetriesPerRequest: null`). */
  connection(): ConnectionOptions
  /** A queue with a name no other test uses, and its QueueEvents (ready). */
  queue<T = unknown>(): Promise<{ queue: Queue<T>; events: QueueEvents; name: string }>
  /** A worker, closed after the test. */
  worker<T = unknown, R = unknown>(
    name: string,
    processor: Processor<T, R>,
    opts?: Omit<WorkerOptions, 'connection'>,
  ): Worker<T, R>
  /** A plain ioredis client (for TIME and inspection), closed after the test. */
  client(): Redis
}

/** One throwaway redis-server per test file; every queue, worker and client closed after each test. */
export function useRedisQueues(): RedisQueues {
  let redis: RedisServer | undefined
  let counter = 0
  const closers: (() => Promise<unknown>)[] = []

  beforeAll(async () => {
    if (available) redis = await startRedis()
  })
  afterEach(async () => {
    // A test that failed with the server frozen leaves it running for the rest.
    redis?.thaw()
    // Workers first (they may hold jobs), then queues and event streams.
    for (const close of closers.splice(0).reverse()) await close()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  const connection = (): ConnectionOptions => ({
    host: '127.0.0.1',
    port: redis!.port,
    maxRetriesPerRequest: null,
  })
  return {
    get redis() {
      return redis!
    },
    connection,
    async queue<T>() {
      const name = `q${++counter}-${process.pid}`
      const queue = new Queue<T>(name, { connection: connection() })
      const events = new QueueEvents(name, { connection: connection() })
      closers.push(
        () => queue.close(),
        () => events.close(),
      )
      await Promise.all([queue.waitUntilReady(), events.waitUntilReady()])
      return { queue, events, name }
    },
    worker(name, processor, opts = {}) {
      const worker = new Worker(name, processor, { ...opts, connection: connection() })
      // A worker with no 'error' listener would crash the test on a lost lock.
      worker.on('error', () => {})
      closers.push(() => worker.close(true))
      return worker
    },
    client() {
      const client = new Redis(redis!.port, '127.0.0.1', { maxRetriesPerRequest: null })
      closers.push(() => client.quit())
      return client
    },
  }
}

/** The Redis server's clock, in ms (what the deadline is stored against). */
export async function redisNowMs(client: Redis): Promise<number> {
  const [seconds, micros] = await client.time()
  return Number(seconds) * 1000 + Number(micros) / 1000
}

/** The expiry `addWithDeadline` stored with a job, in ms on the Redis clock. */
export function storedExpiry(job: Job): number {
  return (job.opts as unknown as { hourglass: { expiresAtMs: number } }).hourglass.expiresAtMs
}

/**
 * Resolves once the Redis server's clock has passed `ms` (a job's stored
 * expiry): the clock a worker judges a job by, which no test can move. It
 * asks Redis, a few ms apart, rather than trusting a local timer: what the
 * test waits for is that clock, however slowly this process is scheduled.
 */
export async function redisClockPasses(client: Redis, ms: number): Promise<void> {
  for (;;) {
    const now = await redisNowMs(client)
    if (now > ms) return
    await new Promise((resolve) => setTimeout(resolve, Math.min(20, Math.ceil(ms - now))))
  }
}
