import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { StoreTimeoutError } from '@hourglass/llm'
import { type FakeProvider, startFakeProvider } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRedisClient, type GatewayRouter } from '../../src/index.js'

/**
 * Admission asks Redis for a request's cooldowns, then for its limit count.
 * When the cooldown read went unanswered (timed out), the count that follows
 * decides locally without a round trip — it would wait out a second bound on
 * the same silent Redis — until a cooldown command settles otherwise. A
 * cooldown command Redis refused is no silence: the count is still sent.
 */
describe('the limits after an unanswered cooldown command', () => {
  let fake: FakeProvider | undefined
  let gateway: GatewayRouter | undefined
  let server: ReturnType<ReturnType<typeof express>['listen']> | undefined
  afterEach(async () => {
    await gateway?.close()
    server?.close()
    await fake?.close()
  })

  /** A gateway on `redis` (llm's bounds: a client of the caller's), and a request to it. */
  async function start(
    redis: GatewayRedisClient,
    clock: ManualClock,
    logger: (record: object) => void = () => {},
  ) {
    fake = await startFakeProvider({ dialect: 'openai' })
    gateway = createGateway(
      {
        providers: {
          p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'], limits: { rpm: 100 } },
        },
        models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
      },
      { redis, clock, logger },
    )
    server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server!.once('listening', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`
    return async () => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      })
      await res.arrayBuffer()
      return res.status
    }
  }

  /** A client whose cooldown commands fail with `cooldownError` while it is set, and whose limit counts are counted. */
  function client(state: { cooldownError: Error | undefined; counts: number }): GatewayRedisClient {
    const run = async (_script: string, numKeys: number, ...args: Array<string | number>) => {
      if (String(args[0]).includes(':limits:')) {
        state.counts++
        return [1, 60_000]
      }
      if (state.cooldownError !== undefined) throw state.cooldownError
      // The cooldown read: no key cooling.
      return Array.from({ length: numKeys }, () => 0)
    }
    return { status: 'ready', evalsha: run, eval: run }
  }

  it('an unanswered cooldown read: the count decides locally, and goes to Redis again once a cooldown read is answered', async () => {
    const state = { cooldownError: new Error('Command timed out') as Error | undefined, counts: 0 }
    const clock = new ManualClock(1_000_000)
    const lines: string[] = []
    const ask = await start(client(state), clock, (record) => lines.push(JSON.stringify(record)))

    expect(await ask()).toBe(200)
    expect(state.counts).toBe(0)
    // The warning says why in words: it read "the client is cooldowns-unanswered",
    // a state of ioredis's that does not exist.
    const why = lines.filter((line) => line.includes('Redis unavailable'))
    expect(why.length).toBeGreaterThan(0)
    expect(why[0]).toContain('the client is silent: its last cooldown read went unanswered')
    // The cooldowns back off (on the gateway's clock): no cooldown read, and the count stays local.
    expect(await ask()).toBe(200)
    expect(state.counts).toBe(0)
    // Redis answers again: the next cooldown read (past the back-off) is answered, and so the count is sent.
    state.cooldownError = undefined
    clock.advance(1000)
    expect(await ask()).toBe(200)
    expect(state.counts).toBe(1)
    expect(await ask()).toBe(200)
    expect(state.counts).toBe(2)
    expect(fake!.requests).toHaveLength(4)
  })

  it("llm's own bound on the cooldown read reads as unanswered too", async () => {
    const state = {
      cooldownError: new StoreTimeoutError('Redis', 'RedisCooldownStore commandTimeoutMs', 1000) as
        | Error
        | undefined,
      counts: 0,
    }
    const ask = await start(client(state), new ManualClock(1_000_000))
    expect(await ask()).toBe(200)
    expect(state.counts).toBe(0)
  })

  it('a cooldown command Redis refused: the count is still sent', async () => {
    const state = {
      cooldownError: new Error("NOPERM User gw has no permissions to access the 'c' key") as
        | Error
        | undefined,
      counts: 0,
    }
    const ask = await start(client(state), new ManualClock(1_000_000))
    expect(await ask()).toBe(200)
    expect(state.counts).toBe(1)
  })
})
