import type { AddressInfo } from 'node:net'
import { redisAvailable, startRedis } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter } from '../src/index.js'

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
 *
 * Real time against a real frozen redis-server (a 50 ms budget): in the
 * timing project, alone on the CPU (beside three other files a 50 ms answer
 * missed its budget). The same rule on a ManualClock, with a frozen Redis
 * client of the test's own, is in readyzWithinBudget.test.ts.
 */
describe('/readyz with a short deadline while Redis does not answer', () => {
  let gateway: GatewayRouter | undefined
  let server: ReturnType<ReturnType<typeof express>['listen']> | undefined
  afterEach(async () => {
    await gateway?.close()
    server?.close()
  })

  it.skipIf(!redisAvailable())(
    'a real redis-server, SIGSTOPped: 200 within the 50 ms budget, not the 504 of a probe waited 500 ms',
    async () => {
      const redis = await startRedis()
      try {
        gateway = createGateway(
          { ...config, redis: { url: redis.url, commandTimeoutMs: 500 } },
          { logger: () => {} },
        )
        expect(await gateway.ready()).toBe(true)
        server = express().use(gateway).listen(0, '127.0.0.1')
        await new Promise((resolve) => server!.once('listening', resolve))
        const { port } = server.address() as AddressInfo
        redis.freeze()
        const res = await fetch(`http://127.0.0.1:${port}/readyz`, {
          headers: { 'x-deadline-remaining-ms': '50' },
          signal: AbortSignal.timeout(5000),
        })
        expect(res.status).toBe(200)
        expect(((await res.json()) as { status: string }).status).toBe('ready')
      } finally {
        redis.thaw()
        await gateway?.close()
        gateway = undefined
        await redis.stop()
      }
    },
  )
})
