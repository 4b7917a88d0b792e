import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { AdmissionPermit } from '../../src/admission/AdmissionPermit.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { drive, pause, WaitClock } from '../support/waitClock.js'

/**
 * Review of the commit that staggers after every reopening and keeps a probe
 * only for a waiter that can send it: callers that wait on more than one
 * slot (several keys; a key's model cooldown and the provider's).
 */

const rateLimited = (retryAfterMs: number) => ({
  ok: false as const,
  error: { kind: 'rate_limited' as const, status: 429, retryAfterMs },
})

describe('admission, callers waiting on several slots', () => {
  it('a caller is staggered once, for the key it goes through, in line order — not again for another key reopening', async () => {
    const K1 = 'sk-test-key-111111111111111111111'
    const K2 = 'sk-test-key-222222222222222222222'
    const clock = new WaitClock()
    const admission = new Admission({ clock, staggerMs: 100 })
    using deadline = Deadline.after(60_000, { clock })
    await admission.report('acme', K1, rateLimited(1000), { model: 'm' })
    await admission.report('acme', K2, rateLimited(1000), { model: 'm' })
    const sent: Record<string, number> = {}
    const call = (name: string, keys: string[], since: number, okAfterMs?: number) =>
      (async () => {
        const permit: AdmissionPermit = await admission.acquire({
          provider: 'acme',
          keys,
          model: 'm',
          deadline,
          waitingSince: since,
        })
        sent[name] = clock.now()
        if (okAfterMs === undefined) permit.release()
        else {
          if (okAfterMs > 0) await pause(clock, okAfterMs)
          await permit.report({ ok: true })
        }
      })()
    await drive(clock, [
      call('F0', [K1], 0, 0),
      // K2 reopens at 1020, while C is in its stagger behind K1's probe.
      call('Z', [K2], 1, 20),
      call('G1', [K2], 1.5),
      call('G2', [K2], 1.6),
      call('F1', [K1], 2),
      call('F2', [K1], 3),
      call('C', [K1, K2], 4),
      call('F3', [K1], 5),
      call('F4', [K1], 6),
    ])
    // Before: C at 1140, after the younger F3 and F4, staggered again for K2.
    expect(sent['C']).toBe(1040)
    const order = ['F2', 'C', 'F3', 'F4'].map((name) => sent[name] as number)
    expect(order).toEqual([...order].sort((a, b) => a - b))
  })

  it('a waiter that can go but waits for a probe kept for a busy caller does not pass its own back and forth: the loop turns, all are answered', async () => {
    const K = 'sk-test-key-AAAAAAAAAAAAAAAAAAAA'
    const KO = 'sk-test-key-OOOOOOOOOOOOOOOOOOOO'
    const clock = new WaitClock()
    // O takes the provider's probe and then waits for the RPM window a filler used up.
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } }, windowMs: 1000, clock })
    const admission = new Admission({ clock, staggerMs: 0, limits })
    await admission.report('acme', K, rateLimited(1000), { model: 'A' })
    await admission.report(
      'acme',
      K,
      { ok: false, error: { kind: 'overloaded', status: 529, retryAfterMs: 1000 } },
      { model: 'A' },
    )
    const log: string[] = []
    const call = (name: string, keys: string[], since: number) =>
      (async () => {
        using deadline = Deadline.after(5_000, { clock })
        try {
          const permit = await admission.acquire({
            provider: 'acme',
            keys,
            model: 'A',
            deadline,
            waitingSince: since,
          })
          log.push(`${name} sent`)
          await permit.report({ ok: true })
        } catch (error) {
          log.push(`${name} ${(error as Error).name}`)
        }
      })()
    const filler = (async () => {
      await pause(clock, 990)
      await limits.count('acme', 0)
    })()
    // Before (a probe handed on while waiting for another's): A and B passed
    // K's probe to each other in microtasks; no timer ever fired again.
    await step(clock, [call('O', [KO], 0), call('B', [K], 20), call('A', [K], 10), filler])
    // Each answered (the RPM window refuses them: what matters is that each is told).
    expect(log).toHaveLength(3)
    expect(clock.now()).toBeLessThan(7000)
  })
})

/** Runs `work` on `clock`, a millisecond at a time (each after two turns of the loop), to 7 s at most. */
async function step(clock: WaitClock, work: Promise<void>[]): Promise<void> {
  let left = work.length
  for (const w of work) void w.finally(() => left--)
  while (left > 0 && clock.now() < 7000) {
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
    clock.advance(1)
  }
}
