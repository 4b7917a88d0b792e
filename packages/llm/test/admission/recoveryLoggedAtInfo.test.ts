import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { CooldownStore } from '../../src/admission/CooldownStore.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'

// A failure is a warning; its recovery ("Redis is back") is news, not a
// warning: at `warn`, an alert on warning lines fired again when the trouble
// ended. A logger with `info` hears the recovery there; one with `warn`
// alone still hears it at `warn` (ProviderLimits.redisDown.test.ts).

function recorder() {
  const lines: Array<[string, string]> = []
  return {
    lines,
    logger: {
      warn: (message: string) => lines.push(['warn', message]),
      info: (message: string) => lines.push(['info', message]),
    },
  }
}

describe("llm's loggers: a recovery at info", () => {
  it('ProviderLimits: Redis unavailable at warn, Redis is back at info', async () => {
    let fail = false
    const run = async () => {
      if (fail) throw new Error('Command timed out')
      return [1, 60_000]
    }
    const redis = { status: 'ready', evalsha: run, eval: run }
    const clock = new ManualClock()
    const { lines, logger } = recorder()
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 100 } },
      redis,
      instances: 2,
      redisBackoffMs: 1000,
      clock,
      logger,
    })
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    fail = true
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    fail = false
    clock.advance(1000)
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    expect(limits.degraded).toBe(false)
    expect(lines).toEqual([
      ['warn', expect.stringMatching(/Redis unavailable/)],
      ['info', expect.stringMatching(/Redis is back/)],
    ])
  })

  it('Admission: the cooldown store failing at warn, available again at info', async () => {
    let fail = false
    const store: CooldownStore = {
      remaining: (_provider, keyIds) =>
        fail
          ? Promise.reject(new Error('Command timed out'))
          : Promise.resolve(keyIds.map(() => 0)),
      extend: (_provider, _keyId, waitMs) =>
        Promise.resolve({ remainingMs: waitMs, extended: true }),
    }
    const clock = new ManualClock()
    const { lines, logger } = recorder()
    const admission = new Admission({ clock, store, logger, storeBackoffMs: 1000 })
    using deadline = Deadline.after(60_000, { clock })
    const acquire = () =>
      admission.acquire({ provider: 'p', keys: ['k1'], model: 'm', deadline, neededMs: 0 })
    ;(await acquire()).release()
    fail = true
    ;(await acquire()).release()
    fail = false
    clock.advance(1000)
    ;(await acquire()).release()
    expect(lines).toEqual([
      ['warn', expect.stringMatching(/cooldown store unavailable/)],
      ['info', expect.stringMatching(/available again/)],
    ])
  })
})
