import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { keyId } from '../../src/admission/keyId.js'
import type { Permit } from '../../src/admission/slot.js'
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
        const permit: Permit = await admission.acquire({
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

  it('two callers that each keep a probe the other needs hand theirs on: sent when the cooldowns end, not at the deadlines', async () => {
    const K = 'sk-test-key-AAAAAAAAAAAAAAAAAAAA'
    const KX = 'sk-test-key-XXXXXXXXXXXXXXXXXXXX'
    const clock = new WaitClock()
    const kx = keyId(KX)
    // X's store round trip takes 5 ms once the cooldowns end (its refresh names
    // KX): Y looks first and keeps K's probe for X; O, older, arrives at 1002
    // and X then keeps the provider's probe for O.
    const store = {
      async remaining(_provider: string, ids: readonly string[]) {
        if (clock.now() >= 1000 && ids.some((id) => id.startsWith(kx))) await pause(clock, 5)
        return ids.map(() => 0)
      },
      async extend() {
        return { remainingMs: 0, extended: true }
      },
    }
    const admission = new Admission({
      clock,
      store: store as never,
      staggerMs: 0,
      storeTimeoutMs: 1000,
    })
    await admission.report('acme', K, rateLimited(1000), { model: 'A' })
    await admission.report(
      'acme',
      K,
      { ok: false, error: { kind: 'overloaded', status: 529, retryAfterMs: 1000 } },
      { model: 'A' },
    )
    await admission.report(
      'acme',
      KX,
      { ok: false, error: { kind: 'auth', status: 401 } },
      { model: 'A' },
    )
    const log: string[] = []
    const call = (name: string, keys: string[], atMs: number, since: number) =>
      (async () => {
        await pause(clock, atMs)
        using deadline = Deadline.after(5_000, { clock })
        try {
          const permit = await admission.acquire({
            provider: 'acme',
            keys,
            model: 'A',
            deadline,
            waitingSince: since,
          })
          log.push(`${name}@${clock.now()}${permit.probe ? ' probe' : ''}`)
          await permit.report({ ok: true })
        } catch (error) {
          log.push(`${name}@${clock.now()} ${(error as Error).name}`)
        }
      })()
    // A millisecond at a time: `drive` jumps to the next timer, past the store's own pause.
    await step(clock, [call('Y', [K], 0, 20), call('X', [K, KX], 1, 10), call('O', [K], 1002, 0)])
    // Before: nothing sent from 1000 to 5000; Y and X failed at their deadlines.
    expect(log).toEqual(['O@1005 probe', 'Y@1005', 'X@1010'])
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
