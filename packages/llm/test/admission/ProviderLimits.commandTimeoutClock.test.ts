import { ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'

// `redisCommandTimeoutMs` runs on the `clock` given, as `redisBackoffMs`
// does: a ManualClock drives both. It ran on the system clock, so a frozen
// Redis under a ManualClock held the count for a real second, whatever the
// test's clock said.
it('a count Redis never answers fails over to the local limiter when the clock given passes redisCommandTimeoutMs', async () => {
  let runs = 0
  const frozen = {
    status: 'ready',
    // A frozen Redis: the connection stays ready and nothing is answered.
    evalsha: () => {
      runs++
      return new Promise<never>(() => {})
    },
    eval: () => {
      runs++
      return new Promise<never>(() => {})
    },
  }
  const clock = new ManualClock()
  const warnings: string[] = []
  const limits = new ProviderLimits({
    limits: { acme: { rpm: 100, tpm: 10_000 } },
    redis: frozen,
    instances: 2,
    redisCommandTimeoutMs: 500,
    clock,
    logger: { warn: (message) => warnings.push(message) },
  })
  let settled = false
  const acquiring = limits.tryAcquire('acme', 10).then((r) => {
    settled = true
    return r
  })
  // Let the count reach the client.
  for (let i = 0; i < 20 && runs === 0; i++) await Promise.resolve()
  expect(runs).toBe(1)
  clock.advance(499)
  for (let i = 0; i < 20; i++) await Promise.resolve()
  expect(settled, 'decided before the command timeout').toBe(false)
  clock.advance(1)
  // A few turns of the event loop, far less than the real 500 ms the
  // system clock's timer took: decided by the ManualClock alone.
  for (let i = 0; i < 5 && !settled; i++) await new Promise((resolve) => setImmediate(resolve))
  expect(settled, 'decided once the clock given passed the command timeout').toBe(true)
  const result = await acquiring
  expect(result.admitted).toBe(true)
  expect(limits.degraded).toBe(true)
  expect(warnings).toEqual([expect.stringMatching(/Redis unavailable/)])
}, 5_000)
