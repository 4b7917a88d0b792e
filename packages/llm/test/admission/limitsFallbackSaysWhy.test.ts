import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'

/** A client that is connected and refuses every script with `message` (as Redis answers an error). */
function refusing(message: string) {
  const fail = () => Promise.reject(new Error(message))
  return { status: 'ready', evalsha: fail, eval: fail }
}

function limitsOn(redis: object, warnings: string[]) {
  return new ProviderLimits({
    limits: { acme: { rpm: 10 } },
    redis: redis as ConstructorParameters<typeof ProviderLimits>[0]['redis'],
    instances: 2,
    clock: new ManualClock(),
    logger: { warn: (message) => warnings.push(message) },
  })
}

// The warning said "Redis unavailable" whatever made the counts local: a
// fleet pointed at a read-only replica after a failover, or an ACL without
// EVALSHA, ran on its local shares for good — Redis up, reachable, and
// refusing every count — with nothing in the log to say why.
describe("the warning that the limits went local says why, as the cooldown store's does", () => {
  it("names Redis's refusal: a read-only replica", async () => {
    const warnings: string[] = []
    const limits = limitsOn(
      refusing("READONLY You can't write against a read only replica."),
      warnings,
    )
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    expect(warnings).toEqual([
      "hourglass limits: Redis unavailable (READONLY You can't write against a read only replica.); limiting on this process alone (limit / instances) until it is back",
    ])
  })

  it("names the client's state when it is not connected", async () => {
    const warnings: string[] = []
    const never = () => new Promise<never>(() => {})
    const limits = limitsOn({ status: 'reconnecting', evalsha: never, eval: never }, warnings)
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    expect(warnings).toEqual([
      expect.stringMatching(
        /^hourglass limits: Redis unavailable \(the client is reconnecting\); /,
      ),
    ])
  })

  it('keeps a long refusal to one line of at most 200 characters', async () => {
    const warnings: string[] = []
    const limits = limitsOn(refusing(`ERR ${'x'.repeat(5000)}\nsecond line`), warnings)
    await limits.tryAcquire('acme', 1)
    const why = /\((.*)\); limiting/.exec(warnings[0] ?? '')?.[1] ?? ''
    expect(why.length).toBeLessThanOrEqual(200)
    expect(why.startsWith('ERR xxx')).toBe(true)
    expect(warnings[0]).not.toContain('\n')
  })
})
