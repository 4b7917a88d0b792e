import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { drive, pause, WaitClock } from '../support/waitClock.js'

const KEY = 'sk-test-key-AAAAAAAAAAAAAAAAAAAA'
const target = (model: string) => ({ provider: 'acme', keys: [KEY], model })

/**
 * Two models on one key of one provider. Model A is rate-limited on the key
 * for 10 s (a 429's `Retry-After`); then the provider is overloaded for 1 s,
 * which cools every model. A call to A waits from then on (its own cooldown
 * holds it for 10 s); a call to B comes 100 ms later with 5 s left. When the
 * overload's cooldown ends, B's lane is free but for the provider's probe:
 * B's call sends it. It was kept for A's call — older in the provider's
 * line, but held by A's cooldown, it could not take it — and B's call
 * waited for it until its deadline (`DeadlineExceededError` at 5 s).
 */
async function overloadAfterAnotherModelsLimit() {
  const clock = new WaitClock()
  const admission = new Admission({ clock, staggerMs: 0 })
  // Disposed once the work is done: `drive` moves the clock only to timers that something waits on.
  using deadline = Deadline.after(60_000, { clock })
  const start = async (model: string) => admission.acquire({ ...target(model), deadline })
  await (await start('A')).report({
    ok: false,
    error: { kind: 'rate_limited', status: 429, retryAfterMs: 10_000 },
  })
  await (await start('B')).report({
    ok: false,
    error: { kind: 'overloaded', status: 529, retryAfterMs: 1_000 },
  })
  const [a, b] = await drive(clock, [
    (async () => {
      const permit = await start('A')
      permit.release()
      return { at: clock.now(), probe: permit.probe }
    })(),
    (async () => {
      await pause(clock, 100)
      using deadline = Deadline.after(5_000, { clock })
      const permit = await admission.acquire({ ...target('B'), deadline })
      permit.release()
      return { at: clock.now(), probe: permit.probe }
    })(),
  ])
  return { a, b }
}

describe("the provider's probe after an overload, with a call held by its own model's cooldown in line", () => {
  it('goes to the call that can send it when the cooldown ends, not to the older one that cannot', async () => {
    const { a, b } = await overloadAfterAnotherModelsLimit()
    // B's call probes the provider as its overload cooldown ends.
    expect(b).toEqual({ status: 'fulfilled', value: { at: 1_000, probe: true } })
    // A's call still waits out its own model's cooldown.
    expect(a).toEqual({ status: 'fulfilled', value: { at: 10_000, probe: true } })
  })
})
