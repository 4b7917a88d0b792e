import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { isKeysRetired } from '../../src/errors/KeysRetiredError.js'

const KEY_A = 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA'
const KEY_B = 'sk-live-BBBBBBBBBBBBBBBBBBBBBBBB'

/**
 * A key is retired for an auth failure or for a quota gone for good. The
 * `KeysRetiredError` of a later call must say which: a caller (the gateway)
 * answers a rejected key and a spent account differently (502 vs 429
 * `insufficient_quota`), and before, every retirement read `auth`.
 */
describe('KeysRetiredError says why the keys were retired', () => {
  const retireBoth = async (kinds: ['auth' | 'quota_exhausted', 'auth' | 'quota_exhausted']) => {
    const clock = new ManualClock(1_000)
    const gate = new Admission({ clock, logger: { warn: () => {} } })
    await gate.report('acme', KEY_A, { ok: false, error: { kind: kinds[0], status: 429 } })
    await gate.report('acme', KEY_B, { ok: false, error: { kind: kinds[1], status: 401 } })
    const deadline = Deadline.after(10_000, { clock })
    const error = await gate
      .acquire({ provider: 'acme', keys: [KEY_A, KEY_B], deadline })
      .catch((e: unknown) => e)
    deadline.dispose()
    expect(isKeysRetired(error)).toBe(true)
    return (error as { reason: string }).reason
  }

  it('quota_exhausted when every key ran out of quota', async () => {
    expect(await retireBoth(['quota_exhausted', 'quota_exhausted'])).toBe('quota_exhausted')
  })

  it('auth when any key was rejected (the config needs fixing either way)', async () => {
    expect(await retireBoth(['quota_exhausted', 'auth'])).toBe('auth')
    expect(await retireBoth(['auth', 'auth'])).toBe('auth')
  })
})
