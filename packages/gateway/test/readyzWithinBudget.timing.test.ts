import type { AddressInfo } from 'node:net'
import { redisAvailable, startRedis } from '@hourglass/testkit'
import express from 'express'
import { expect, it } from 'vitest'
import { createGateway } from '../src/index.js'

// readyzWithinBudget.test.ts states the rule (a 50 ms readiness probe while
// Redis is frozen gets 200 within its budget, not the ingress 504) and checks
// it on a ManualClock. This is the same probe in real time against a real
// SIGSTOPped redis-server: in the timing project, alone on the CPU (beside
// three other files, a 50 ms answer missed its budget).
it.skipIf(!redisAvailable())(
  'a real redis-server, SIGSTOPped: /readyz answers 200 within the 50 ms budget, not the 504 of a probe waited 500 ms',
  async () => {
    const redis = await startRedis()
    const gateway = createGateway(
      {
        providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        // A fixed reserve: the adaptive one (10–100 ms) could spend a 50 ms budget on arrival.
        deadline: { reserveMs: 10 },
        redis: { url: redis.url, commandTimeoutMs: 500 },
      },
      { logger: () => {} },
    )
    const server = express().use(gateway).listen(0, '127.0.0.1')
    try {
      await new Promise((resolve) => server.once('listening', resolve))
      expect(await gateway.ready()).toBe(true)
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
      server.close()
      await gateway.close()
      await redis.stop()
    }
  },
)
