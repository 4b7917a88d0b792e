import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { type FakeProvider, startFakeProvider } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRedisClient, type GatewayRouter } from '../src/index.js'

/**
 * After a limit count fails, the limits stay local for a back-off (llm's
 * `redisBackoffMs`), then one request asks Redis again. The back-off runs on
 * the gateway's clock (`clock`), as its deadlines and cooldowns do, so a
 * test — or an app with a clock of its own — moves all of them together.
 */
describe("the Redis back-off of the gateway's limits", () => {
  let fake: FakeProvider | undefined
  let gateway: GatewayRouter | undefined
  let server: ReturnType<ReturnType<typeof express>['listen']> | undefined
  afterEach(async () => {
    await gateway?.close()
    server?.close()
    await fake?.close()
  })

  it("runs on the gateway's clock: Redis is asked again once that clock has moved past it, not before", async () => {
    fake = await startFakeProvider({ dialect: 'openai' })
    // Limit counts reach Redis (the key names the limits); the first one fails as a timeout would.
    let counts = 0
    const redis: GatewayRedisClient = {
      status: 'ready',
      evalsha: async (_sha: string, _numKeys: number, ...args: Array<string | number>) => {
        if (!String(args[0]).includes(':limits:')) throw new Error('cooldowns: not in this test')
        counts++
        if (counts === 1) throw new Error('Command timed out')
        return [1, 60_000]
      },
      eval: async () => {
        throw new Error('cooldowns: not in this test')
      },
    }
    const clock = new ManualClock(1_000_000)
    gateway = createGateway(
      {
        providers: {
          p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'], limits: { rpm: 100 } },
        },
        models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
      },
      { redis, clock, logger: () => {} },
    )
    server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server!.once('listening', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`
    const ask = async () => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      })
      await res.arrayBuffer()
      return res.status
    }

    // The failed count: this request is counted locally, and answered.
    expect(await ask()).toBe(200)
    expect(counts).toBe(1)
    // Within the back-off (llm's 1 s for a client of the caller's), on the gateway's clock: local, Redis not asked.
    expect(await ask()).toBe(200)
    clock.advance(999)
    expect(await ask()).toBe(200)
    expect(counts).toBe(1)
    // Past it: one request asks Redis again.
    clock.advance(1)
    expect(await ask()).toBe(200)
    expect(counts).toBe(2)
    expect(fake.requests).toHaveLength(4)
  })
})
