import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGateway, isGatewayConfigError } from '../../src/index.js'
import { fallback, type Harness, startHarness } from '../support/harness.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the Redis URL password test is SKIPPED. Install redis-server (CI does). !!!\n',
  )
}

/** A generated password with a `%` in it, as a password manager makes them. */
const PASSWORD = 'Tr0ub4dor50%off'

const config = (url: string) => ({
  // Never dialled: nothing is asked of the provider here.
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['sk-url-pw'] } },
  models: { m: fallback(['p', 'model-p']) },
  redis: { url, keyPrefix: 'url-credentials' },
})

/**
 * ioredis percent-decodes the user and password of `redis.url`: one written
 * as it is, with a `%` that starts no escape (`50%off`), threw a bare
 * `URIError: URI malformed` out of `createGateway`, naming neither the
 * field nor the fix.
 */
describe('a redis.url whose password holds a "%"', () => {
  it('written as it is: a config error naming redis.url and the fix, the password not in it', () => {
    let thrown: unknown
    try {
      createGateway(config(`redis://:${PASSWORD}@127.0.0.1:6390`))
    } catch (error) {
      thrown = error
    }
    expect(isGatewayConfigError(thrown)).toBe(true)
    const message = (thrown as Error).message
    expect(message).toMatch(/redis\.url: .*password.*%25/)
    expect(message).not.toContain(PASSWORD)
    expect(message).not.toContain('off')
  })

  it('a user written so: said of the user', () => {
    expect(() => createGateway(config('redis://ops%@127.0.0.1:6390'))).toThrow(
      /redis\.url: .*user.*%25/,
    )
  })

  describe.skipIf(!available)('percent-encoded, on a Redis that requires it', () => {
    let redis: RedisServer
    let harness: Harness | undefined
    beforeAll(async () => {
      redis = await startRedis()
      const admin = new Redis(redis.url)
      await admin.config('SET', 'requirepass', PASSWORD)
      admin.disconnect()
    })
    afterAll(async () => {
      await harness?.close()
      await redis?.stop()
    })

    it('authenticates: /readyz reads shared, no warning', async () => {
      const url = `redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${redis.port}`
      harness = await startHarness(config(url), { drainTimeoutMs: 0 })
      const res = await fetch(`${harness.url}/readyz`)
      expect(await res.json()).toEqual({ status: 'ready', redis: 'shared' })
      expect(harness.logs.filter((l) => l.level === 'warn')).toEqual([])
    })
  })
})
