import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRedisClient, type GatewayRouter } from '../src/index.js'

const config = {
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
  // A fixed reserve: the adaptive one (10–100 ms) could spend a 50 ms budget on arrival.
  deadline: { reserveMs: 10 },
}

/**
 * A readiness probe sent with a short budget (`x-deadline-remaining-ms: 50`,
 * an Envoy or mesh health check's timeout) while Redis is frozen — connected,
 * its commands unanswered, as a SIGSTOPped redis-server: `/readyz` waited for
 * its Redis probe (up to `redis.commandTimeoutMs`) past the budget, and the
 * ingress backstop answered 504 — an unready instance, for every instance of
 * the fleet at once, where Redis being away deliberately does not make one
 * unready. It answers within its budget, with what the last check
 * established; the probe's own answer counts from when it comes.
 */
describe('/readyz with a short deadline while Redis does not answer', () => {
  let gateway: GatewayRouter | undefined
  let server: ReturnType<ReturnType<typeof express>['listen']> | undefined
  afterEach(async () => {
    await gateway?.close()
    server?.close()
  })

  it('answers 200 with the Redis state within its budget, not 504; the probe’s verdict counts once it comes', async () => {
    const clock = new ManualClock()
    /** Each probe's settle functions, in order: the frozen Redis never answers by itself. */
    const pending: Array<(error: Error) => void> = []
    const frozen: GatewayRedisClient = {
      status: 'ready',
      eval: () =>
        new Promise((_resolve, reject) => {
          pending.push(reject)
          // The probe is out and /readyz waits on it: the budget's 50 ms pass.
          setImmediate(() => clock.advance(50))
        }),
      evalsha: () => new Promise(() => {}),
    }
    gateway = createGateway(config, { redis: frozen, clock, logger: () => {} })
    server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server!.once('listening', resolve))
    const { port } = server.address() as AddressInfo
    const probe = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, {
        headers: { 'x-deadline-remaining-ms': '50' },
        signal: AbortSignal.timeout(5000),
      })
      return { status: res.status, body: await res.json() }
    }

    // No check has found anything yet: where limits are counted as far as is known.
    expect(await probe()).toEqual({ status: 200, body: { status: 'ready', redis: 'shared' } })
    expect(pending).toHaveLength(1)
    // The probe times out (ioredis's commandTimeout): from then on, local-fallback …
    pending[0]?.(new Error('Command timed out'))
    await new Promise((resolve) => setImmediate(resolve))
    expect(gateway.redisState()).toBe('local-fallback')
    // … which the next short probe answers, within its budget again.
    expect(await probe()).toEqual({
      status: 200,
      body: { status: 'ready', redis: 'local-fallback' },
    })
  })
})
