import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

/** A frozen Redis: the connection stays ready and no command is answered. */
function frozenRedis() {
  const sent = { runs: 0 }
  const hang = () => {
    sent.runs++
    return new Promise<never>(() => {})
  }
  return { client: { status: 'ready', evalsha: hang, eval: hang }, sent }
}

/** Turns of the event loop until `done()` (bounded): what a timer on a ManualClock sets off. */
async function turns(done: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !done(); i++) await new Promise((resolve) => setImmediate(resolve))
}

/**
 * Limits whose every count waits `redisCommandTimeoutMs` (2 s) on a frozen
 * Redis, then is decided by the local share (RPM 1 a 10 s window): the
 * first request is admitted, the second is refused until that window's
 * reset, ~10 s away.
 */
async function spentWhileRedisIsFrozen(clock: ManualClock) {
  const { client, sent } = frozenRedis()
  const limits = new ProviderLimits({
    limits: { acme: { rpm: 1 } },
    windowMs: 10_000,
    redis: client,
    redisCommandTimeoutMs: 2000,
    redisBackoffMs: 0,
    clock,
    logger: { warn: () => {} },
  })
  const first = limits.tryAcquire('acme', 1)
  await turns(() => sent.runs === 1)
  clock.advance(2000)
  expect((await first).admitted).toBe(true)
  return { limits, sent }
}

// Whether the reset fits was measured against what the deadline had left
// when the count began, not when it was decided: a count that waited out
// the command timeout on a frozen Redis said a reset 10 s away fitted the
// 9 s left, and admission waited for it — the call ended with its
// deadline instead of going to its fallback at once.
describe('a refusal says whether the reset fits the time left when it is decided', () => {
  it('ProviderLimits: after a 2 s wait for Redis, a reset 10 s away does not fit the 9 s left of 11 s', async () => {
    const clock = new ManualClock()
    const { limits, sent } = await spentWhileRedisIsFrozen(clock)
    using deadline = Deadline.after(11_000, { clock })
    const second = limits.tryAcquire('acme', 1, { deadline })
    await turns(() => sent.runs === 2)
    clock.advance(2000)
    const decision = await second
    expect(decision.admitted).toBe(false)
    if (decision.admitted) return
    expect(decision.retryAfterMs).toBeGreaterThan(9000)
    expect(decision.fitsDeadline).toBe(false)
  })

  it('Admission: the call is refused at once (its fallback goes), not held until its deadline', async () => {
    const clock = new ManualClock()
    const { limits, sent } = await spentWhileRedisIsFrozen(clock)
    const admission = new Admission({ clock, limits, logger: { warn: () => {} } })
    using deadline = Deadline.after(11_000, { clock })
    let outcome: unknown
    admission.acquire({ provider: 'acme', deadline, neededMs: 0, hasFallback: true }).then(
      () => (outcome = 'granted'),
      (error: unknown) => (outcome = error),
    )
    await turns(() => sent.runs === 2)
    clock.advance(2000)
    await turns(() => outcome !== undefined)
    expect(isRateLimited(outcome)).toBe(true)
  })
})

describe('a deadline that is no Deadline', () => {
  it('is a TypeError on the first call, not only once the window is full', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 3 } } })
    // Before: admitted while there was room, the TypeError only under load.
    await expect(
      limits.tryAcquire('acme', 1, { deadline: 5000 as unknown as Deadline }),
    ).rejects.toThrow(/deadline must be a Deadline/)
  })
})
