import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { slowFirstConnection } from './support/slowFirstConnection.js'

/** Whether `promise` has settled once pending callbacks have run (no clock advanced). */
async function settledNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false
  promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  await new Promise((resolve) => setImmediate(resolve))
  return settled
}

describe('a Redis whose first connection never comes up', () => {
  it('costs one command timeout per back-off, not one per request', async () => {
    const clock = new ManualClock()
    const client = slowFirstConnection()
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 100 } },
      redis: client,
      redisBackoffMs: 1000,
      redisCommandTimeoutMs: 1000,
      clock,
      logger: { warn: () => {}, info: () => {} },
    })
    // The first request waits for the connection, as long as the command timeout.
    const first = limits.tryAcquire('acme', 0)
    expect(await settledNow(first)).toBe(false)
    clock.advance(1000)
    expect(await first).toEqual({ admitted: true })
    expect(limits.degraded).toBe(true)

    // Within the back-off the others count locally at once. They each
    // waited the command timeout again: one second added to every request
    // for as long as the connection stayed down.
    const during = [limits.tryAcquire('acme', 0), limits.tryAcquire('acme', 0)]
    for (const request of during) expect(await settledNow(request)).toBe(true)
    expect(await Promise.all(during)).toEqual([{ admitted: true }, { admitted: true }])

    // After it, one request tries the connection again; the others stay local.
    clock.advance(1000)
    const retrying = limits.tryAcquire('acme', 0)
    const beside = limits.tryAcquire('acme', 0)
    expect(await settledNow(beside)).toBe(true)
    expect(await settledNow(retrying)).toBe(false)
    clock.advance(1000)
    expect(await retrying).toEqual({ admitted: true })
    expect(client.runs).toBe(0)
    // One wait for the connection, shared: its `ready` and `close` listeners, not a pair per request.
    expect(client.listeners.size).toBe(2)

    // Up at last, during a back-off: counted in Redis again at once.
    client.comeUp()
    // The two counts that timed out waiting were made locally: not sent now
    // (firstConnectionGivenUp.test.ts). This one goes to Redis.
    await new Promise((resolve) => setImmediate(resolve))
    expect(client.runs).toBe(0)
    expect(await limits.tryAcquire('acme', 0)).toEqual({ admitted: true })
    expect(client.runs).toBe(1)
  })
})
