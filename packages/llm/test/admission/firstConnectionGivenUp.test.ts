import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { RedisCooldownStore } from '../../src/admission/RedisCooldownStore.js'
import { slowFirstConnection } from './support/slowFirstConnection.js'

const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('a command given up on while the first connection came up', () => {
  it('ProviderLimits: a count that timed out (decided locally) is not sent to Redis once it is up', async () => {
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
    // One count per back-off waits for the connection, times out, and is
    // decided by the local share.
    const first = limits.tryAcquire('acme', 0)
    await turn()
    clock.advance(1000)
    expect(await first).toEqual({ admitted: true })
    clock.advance(1000)
    const second = limits.tryAcquire('acme', 0)
    await turn()
    clock.advance(1000)
    expect(await second).toEqual({ admitted: true })

    client.comeUp()
    await turn()
    await turn()
    // Sent now, both were counted twice — locally, and in the Redis window
    // the connection came up in (docs/limits.md: "counts made locally are
    // not replayed into Redis"): an outage of N back-offs filled the
    // fleet's window with N requests nobody made through it.
    expect(client.runs).toBe(0)
    expect(await limits.tryAcquire('acme', 0)).toEqual({ admitted: true })
    expect(client.runs).toBe(1)
  })

  it('RedisCooldownStore: a cooldown write that timed out is not written once Redis is up', async () => {
    const clock = new ManualClock()
    const client = slowFirstConnection()
    const store = new RedisCooldownStore(client, { commandTimeoutMs: 1000, clock })
    const extend = store.extend('acme', 'k1', 30_000, 'rate_limited (429), server hint')
    const read = store.remaining('acme', ['k1'])
    await turn()
    clock.advance(1000)
    await expect(extend).rejects.toMatchObject({ code: 'STORE_TIMEOUT' })
    await expect(read).rejects.toMatchObject({ code: 'STORE_TIMEOUT' })

    // Redis comes up long after: written now, the 30 s would run from now,
    // every process of the fleet held back for a limit that had ended.
    clock.advance(60_000)
    client.comeUp()
    await turn()
    await turn()
    expect(client.runs).toBe(0)
  })
})
