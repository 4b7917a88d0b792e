import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type FakeProvider,
  type RedisServer,
  redisAvailable,
  startFakeProvider,
  startRedis,
} from '@hourglass/testkit'
import express from 'express'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGateway, parseGatewayConfig } from '../../src/index.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the /readyz ACL key-pattern test is SKIPPED. Install redis-server (CI does). !!!\n',
  )
}

/**
 * A Redis ACL user whose key patterns do not cover the gateway's keyPrefix
 * (`~app:*`, the gateway on `hourglass:gateway`): every limit count and
 * cooldown read is refused (NOPERM), and the instance counts alone. The
 * readiness probe was keyless, so Redis ran it, and `/readyz` read `shared`
 * — an operator alerting on the `redis` field, as the README says to, never
 * heard. The probe declares a key under each prefix, so Redis checks it as
 * it checks the commands it stands for.
 */
describe.skipIf(!available)('/readyz with a Redis user whose ACL refuses the gateway keys', () => {
  let redis: RedisServer
  let fake: FakeProvider
  let admin: Redis
  beforeAll(async () => {
    redis = await startRedis()
    admin = new Redis(redis.url)
    await admin.call('ACL', 'SETUSER', 'elsewhere', 'on', '>pw', '~app:*', '+@all')
    await admin.call('ACL', 'SETUSER', 'allowed', 'on', '>pw', '~hourglass:gateway:*', '+@all')
    fake = await startFakeProvider({ dialect: 'openai' })
  })
  afterAll(async () => {
    admin?.disconnect()
    await fake?.close()
    await redis?.stop()
  })

  async function readyzAs(
    user: string,
  ): Promise<{ before: string; after: string; statuses: number[] }> {
    const gateway = createGateway(
      parseGatewayConfig({
        providers: {
          p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k1'], limits: { rpm: 2 } },
        },
        models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        limits: { instances: 2 },
        redis: { url: `redis://${user}:pw@127.0.0.1:${redis.port}` },
      }),
      { logger: () => {} },
    )
    const app = express()
    app.use(gateway)
    const server: Server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      expect(await gateway.ready(2000)).toBe(true)
      const readyz = async () =>
        ((await (await fetch(`${base}/readyz`)).json()) as { redis: string }).redis
      const before = await readyz()
      const statuses: number[] = []
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${base}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '1500' },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
        })
        await res.arrayBuffer()
        statuses.push(res.status)
      }
      return { before, after: await readyz(), statuses }
    } finally {
      await gateway.close()
      server.close()
    }
  }

  it('reads local-fallback, before and after requests, while every count is local', async () => {
    const seen = await readyzAs('elsewhere')
    // rpm 2 over 2 instances: this one's local share admits 1.
    expect(seen.statuses).toEqual([200, 429, 429])
    expect(seen.before).toBe('local-fallback')
    expect(seen.after).toBe('local-fallback')
  })

  it('a user whose ACL covers the keyPrefix still reads shared (the whole RPM limit admitted)', async () => {
    const seen = await readyzAs('allowed')
    expect(seen.statuses).toEqual([200, 200, 429])
    expect(seen.before).toBe('shared')
    expect(seen.after).toBe('shared')
  })
})
