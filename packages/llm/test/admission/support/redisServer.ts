import { type RedisServer, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll } from 'vitest'

/** The ioredis options these tests set. */
export interface ClientOptions {
  lazyConnect?: boolean
  enableOfflineQueue?: boolean
  maxRetriesPerRequest?: number
  commandTimeout?: number
  keyPrefix?: string
  retryStrategy?: () => null
}

export interface RedisForTests {
  /** The redis-server (from the block's beforeAll on). */
  readonly server: RedisServer
  /**
   * A client of it (or of `url`) made with `options`: its `error` events
   * swallowed (a test may stop or freeze Redis), disconnected after the test.
   */
  client(options: ClientOptions, url?: string): Redis
}

/**
 * One real redis-server for the tests of the calling describe block, and
 * their clients disconnected after each test: call it inside the block
 * (where `redisAvailable()` held).
 */
export function useRedisServer(): RedisForTests {
  let server: RedisServer | undefined
  const clients: Redis[] = []
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(async () => {
    await server?.stop()
  })
  afterEach(() => {
    // A test that failed while Redis was frozen must not leave it frozen for the next.
    server?.thaw()
    for (const c of clients.splice(0)) c.disconnect()
  })
  const started = (): RedisServer => {
    if (server === undefined) throw new Error('redis-server starts in beforeAll: use it in a test')
    return server
  }
  return {
    get server() {
      return started()
    },
    client(options, url) {
      const c = new Redis(url ?? started().url, options)
      c.on('error', () => {})
      clients.push(c)
      return c
    },
  }
}
