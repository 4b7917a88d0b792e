import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRedisClient, type GatewayRouter } from '../src/index.js'

const config = {
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
}

/**
 * A `redis` client of one's own whose `eval` throws where ioredis would
 * reject (a wrapper that fails fast — a circuit breaker, a tracing proxy —
 * or a test double): the `/readyz` probe threw out of its promise race, so
 * the check "that never rejects" rejected. The probe was never answered
 * (a load balancer's health check timing out, the instance taken out of
 * rotation), and the rejection was unhandled — which ends a Node process
 * that has no handler of its own for it. The limit and cooldown commands
 * already took such a client as Redis failing (local limits).
 */
describe('/readyz with a Redis client whose eval throws instead of rejecting', () => {
  let gateway: GatewayRouter | undefined
  let server: ReturnType<ReturnType<typeof express>['listen']> | undefined
  afterEach(async () => {
    await gateway?.close()
    server?.close()
  })

  it('answers local-fallback (the probe refused), as for a rejected probe', async () => {
    let probes = 0
    const throwing: GatewayRedisClient = {
      status: 'ready',
      eval: () => {
        probes++
        throw new Error('circuit open')
      },
      evalsha: () => {
        throw new Error('circuit open')
      },
    }
    gateway = createGateway(config, { redis: throwing, logger: () => {} })
    server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server!.once('listening', resolve))
    const { port } = server.address() as AddressInfo
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, {
      signal: AbortSignal.timeout(5000),
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'ready', redis: 'local-fallback' })
    expect(probes).toBe(1)
    expect(gateway.redisState()).toBe('local-fallback')
  })
})
