import diagnostics from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Admission, type AdmissionOptions } from '../../src/admission/Admission.js'
import type { AdmissionPermit } from '../../src/admission/AdmissionPermit.js'
import { MemoryCooldownStore } from '../../src/admission/MemoryCooldownStore.js'
import { type LlmCooldownMessage, llmChannels } from '../../src/channels.js'

const KEY_A = 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA'
const KEY_B = 'sk-live-BBBBBBBBBBBBBBBBBBBBBBBB'
const DAY_MS = 86_400_000
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

let clock: ManualClock
const cooldowns: LlmCooldownMessage[] = []
const onCooldown = (message: unknown) => cooldowns.push(message as LlmCooldownMessage)
beforeEach(() => {
  clock = new ManualClock(1_000)
  cooldowns.length = 0
  diagnostics.subscribe(llmChannels.cooldown.name, onCooldown)
})
afterEach(() => {
  diagnostics.unsubscribe(llmChannels.cooldown.name, onCooldown)
})

/** An Admission on the manual clock whose store records every extension it is asked for. */
function admission(options: AdmissionOptions = {}) {
  const store = new MemoryCooldownStore({ clock })
  const extended: number[] = []
  const extend = store.extend.bind(store)
  store.extend = (scope, id, waitMs) => {
    extended.push(waitMs)
    return extend(scope, id, waitMs)
  }
  const gate = new Admission({
    clock,
    store,
    staggerMs: 0,
    defaultNeededMs: 0,
    logger: { warn: () => {} },
    ...options,
  })
  return { gate, extended }
}

const failure = (kind: 'rate_limited' | 'overloaded', status: number, retryAfterMs: number) => ({
  ok: false as const,
  error: { kind, status, retryAfterMs },
})

describe('Admission caps a cooldown from a server hint at maxRetryAfterMs (default 60 s)', () => {
  it('a 429 asking for a day cools its model for 60 s, here and in the store; then one probe goes, and its answer lets the rest through', async () => {
    const { gate, extended } = admission()
    const target = { provider: 'acme', keys: [KEY_A], model: 'm1' }
    await gate.report('acme', KEY_A, failure('rate_limited', 429, DAY_MS), { model: 'm1' })
    expect(gate.forecast(target).waitMs).toBe(60_000)
    // What other processes learn (the Redis store) is the capped wait, not the day.
    expect(extended).toEqual([60_000])
    expect(cooldowns.at(-1)?.reason).toBe(
      'rate_limited (429), server hint of 86400000 ms capped at maxRetryAfterMs (60000 ms)',
    )

    // Until then a call that cannot wait is refused, told 60 s, not a day.
    using short = Deadline.after(10_000, { clock })
    await expect(gate.acquire({ ...target, deadline: short })).rejects.toMatchObject({
      code: 'RATE_LIMITED',
      retryAfterMs: 60_000,
    })

    clock.advance(60_000)
    const probe = await gate.acquire(target)
    expect(probe.probe).toBe(true)
    let follower: AdmissionPermit | undefined
    void gate.acquire(target).then((p) => {
      follower = p
    })
    await flush()
    expect(follower).toBeUndefined() // waits for the probe's answer, sending nothing
    await probe.report({ ok: true, latencyMs: 10 })
    await flush()
    expect(follower?.probe).toBe(false)
  })

  it('a 529 overload asking for a day holds the whole provider (every key, every model) for 60 s only', async () => {
    const { gate } = admission()
    await gate.report('acme', KEY_A, failure('overloaded', 529, DAY_MS), { model: 'm1' })
    expect(gate.forecast({ provider: 'acme', keys: [KEY_A, KEY_B], model: 'm2' }).waitMs).toBe(
      60_000,
    )
    clock.advance(60_000)
    const probe = await gate.acquire({ provider: 'acme', keys: [KEY_B], model: 'm2' })
    expect(probe.probe).toBe(true)
    probe.release()
  })

  it('the option overrides the default; a hint within it is kept as asked', async () => {
    const low = admission({ maxRetryAfterMs: 5_000 })
    await low.gate.report('acme', KEY_A, failure('rate_limited', 429, DAY_MS))
    expect(low.gate.forecast({ provider: 'acme', keys: [KEY_A] }).waitMs).toBe(5_000)
    await low.gate.report('other', KEY_A, failure('rate_limited', 429, 3_000))
    expect(low.gate.forecast({ provider: 'other', keys: [KEY_A] }).waitMs).toBe(3_000)

    const high = admission({ maxRetryAfterMs: 2 * DAY_MS })
    await high.gate.report('acme', KEY_A, failure('rate_limited', 429, DAY_MS))
    expect(high.gate.forecast({ provider: 'acme', keys: [KEY_A] }).waitMs).toBe(DAY_MS)

    const standard = admission()
    await standard.gate.report('acme', KEY_A, failure('rate_limited', 429, 30_000))
    expect(standard.gate.forecast({ provider: 'acme', keys: [KEY_A] }).waitMs).toBe(30_000)
    expect(standard.extended).toEqual([30_000])
  })

  it('must be a finite number ≥ 0: NaN, Infinity or a negative is a RangeError naming it, no number a TypeError', () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, -1]) {
      expect(() => new Admission({ maxRetryAfterMs: value }), String(value)).toThrow(
        /Admission: maxRetryAfterMs must be a finite number ≥ 0/,
      )
      expect(() => new Admission({ maxRetryAfterMs: value })).toThrow(RangeError)
    }
    expect(() => new Admission({ maxRetryAfterMs: '60000' as unknown as number })).toThrow(
      TypeError,
    )
    expect(() => new Admission({ maxRetryAfterMs: 0 })).not.toThrow()
  })
})

describe('acquire’s maxRetryAfterMs bounds only the part of a cooldown a server asked for', () => {
  const settleOf = (acquired: Promise<AdmissionPermit>) => {
    const state: { permit?: AdmissionPermit; error?: unknown } = {}
    acquired.then(
      (permit) => {
        state.permit = permit
      },
      (error: unknown) => {
        state.error = error
      },
    )
    return state
  }

  it('a 429 asking 30 s refuses a caller taking 5 s at once, naming the wait; 4 s before its end the caller waits them', async () => {
    const { gate } = admission()
    const target = { provider: 'acme', keys: [KEY_A], model: 'm1' }
    await gate.report('acme', KEY_A, failure('rate_limited', 429, 30_000), { model: 'm1' })
    const refused = settleOf(gate.acquire({ ...target, maxRetryAfterMs: 5_000 }))
    await flush()
    expect(refused.error).toMatchObject({
      code: 'RATE_LIMITED',
      kind: 'rate_limited',
      retryAfterMs: 30_000,
      reason: 'the provider asked for 30 s, beyond maxRetryAfterMs (5000 ms); not waited',
    })
    // Capped by admission itself (a day kept as 60 s): what holds is what is weighed.
    await gate.report('acme', KEY_B, failure('rate_limited', 429, DAY_MS), { model: 'm1' })
    await expect(
      gate.acquire({ provider: 'acme', keys: [KEY_B], model: 'm1', maxRetryAfterMs: 59_999 }),
    ).rejects.toMatchObject({ reason: expect.stringContaining('asked for 60 s, beyond') })

    clock.advance(26_000)
    const waited = settleOf(gate.acquire({ ...target, maxRetryAfterMs: 5_000 }))
    await flush()
    expect(waited).toEqual({})
    clock.advance(4_000)
    await flush()
    expect(waited.permit?.probe).toBe(true)
    waited.permit?.release()
  })

  it('a wait no server asked for is still taken: an overload’s own 5–10 s, a backoff — and a key held by one is waited for before a key the server holds past the cap', async () => {
    const { gate } = admission({ random: () => 0 })
    // An overload without a hint: its own wait (5 s at random 0), not the server's.
    await gate.report('acme', KEY_A, { ok: false, error: { kind: 'overloaded', status: 529 } })
    const overload = settleOf(gate.acquire({ provider: 'acme', keys: [KEY_A], maxRetryAfterMs: 0 }))
    await flush()
    expect(overload).toEqual({})
    clock.advance(5_000)
    await flush()
    expect(overload.permit).toBeDefined()
    await overload.permit?.report({ ok: true, latencyMs: 1 })

    // Key A held 30 s by the server, key B 40 s by this admission's own wait.
    const own = admission({ cooldownMs: () => 40_000 })
    await own.gate.report('acme', KEY_A, failure('rate_limited', 429, 30_000))
    await own.gate.report('acme', KEY_B, {
      ok: false,
      error: { kind: 'rate_limited', status: 429 },
    })
    const both = settleOf(
      own.gate.acquire({ provider: 'acme', keys: [KEY_A, KEY_B], maxRetryAfterMs: 5_000 }),
    )
    await flush()
    expect(both).toEqual({}) // waiting, not refused
    // Key A's server wait comes within 5 s at +25 s: its end (+30 s) is sooner than key B's.
    clock.advance(25_000)
    await flush()
    clock.advance(5_000)
    await flush()
    expect(both.permit?.key).toBe(KEY_A)
    both.permit?.release()
  })

  it('weighs the deadline by when a key frees first: key B’s longer backoff neither refuses a call that fits key A’s end nor names its own wait', async () => {
    // Key A held 30 s by the server (past the caller's 5 s), key B 40 s by
    // admission's own backoff: weighed by B's 40 s alone, a call with 35 s
    // left was refused, "retry after 40000 ms", though A frees at 30 s.
    const own = admission({ cooldownMs: () => 40_000 })
    await own.gate.report('acme', KEY_A, failure('rate_limited', 429, 30_000))
    await own.gate.report('acme', KEY_B, {
      ok: false,
      error: { kind: 'rate_limited', status: 429 },
    })
    const keys = { provider: 'acme', keys: [KEY_A, KEY_B], maxRetryAfterMs: 5_000 }
    const fits = settleOf(
      own.gate.acquire({ ...keys, deadline: Deadline.after(35_000, { clock }) }),
    )
    const short = settleOf(
      own.gate.acquire({ ...keys, deadline: Deadline.after(20_000, { clock }) }),
    )
    await flush()
    expect(fits).toEqual({})
    expect(short.error).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 30_000 })
    clock.advance(25_000)
    await flush()
    clock.advance(5_000)
    await flush()
    expect(fits.permit?.key).toBe(KEY_A)
    fits.permit?.release()
  })
})
