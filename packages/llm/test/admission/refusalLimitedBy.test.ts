import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { CooldownStore } from '../../src/admission/CooldownStore.js'
import { MemoryCooldownStore } from '../../src/admission/MemoryCooldownStore.js'
import type { AdmissionOutcome } from '../../src/admission/slot.js'
import { type LlmCooldownMessage, llmChannels } from '../../src/channels.js'
import { isRateLimited, type RateLimitedError } from '../../src/errors/RateLimitedError.js'

const KEY_A = 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA'
const KEY_B = 'sk-live-BBBBBBBBBBBBBBBBBBBBBBBB'

// A refusal by a cooldown says which limit started it (`limitedBy`), as the
// provider's 429 did: the gateway answers the client's next request with the
// same 429 `type` (`tokens` invites a smaller request), not `requests`.

const limited = (by: 'tokens' | 'requests', ms: number): AdmissionOutcome => ({
  ok: false,
  error: { kind: 'rate_limited', status: 429, retryAfterMs: ms, limitedBy: by },
})

function gate(options: { store?: CooldownStore; clock?: ManualClock; retireMs?: number } = {}) {
  const clock = options.clock ?? new ManualClock(1_000)
  const admission = new Admission({
    clock,
    staggerMs: 0,
    defaultNeededMs: 0,
    logger: { warn: () => {} },
    ...(options.store === undefined ? {} : { store: options.store }),
    ...(options.retireMs === undefined ? {} : { retireMs: options.retireMs }),
  })
  const refusal = async (keys = [KEY_A], budgetMs = 2_000) => {
    using deadline = Deadline.after(budgetMs, { clock })
    const error = await admission
      .acquire({ provider: 'acme', model: 'm', keys, deadline })
      .catch((e: unknown) => e)
    expect(isRateLimited(error)).toBe(true)
    return error as RateLimitedError
  }
  const acquire = () => {
    const deadline = Deadline.after(60_000, { clock })
    return admission.acquire({ provider: 'acme', model: 'm', keys: [KEY_A], deadline })
  }
  return { clock, admission, refusal, acquire }
}

describe('a refusal by cooldown says which limit started it', () => {
  it('a tokens 429: tokens; a requests 429: requests; one that did not say: none', async () => {
    for (const by of ['tokens', 'requests'] as const) {
      const { admission, refusal } = gate()
      await admission.report('acme', KEY_A, limited(by, 30_000), { model: 'm' })
      expect((await refusal()).limitedBy).toBe(by)
    }
    const { admission, refusal } = gate()
    await admission.report(
      'acme',
      KEY_A,
      { ok: false, error: { kind: 'rate_limited', status: 429, retryAfterMs: 30_000 } },
      { model: 'm' },
    )
    expect((await refusal()).limitedBy).toBeUndefined()
  })

  it('a late, shorter report of another limit leaves the cause of the end that holds', async () => {
    const { clock, refusal, acquire } = gate()
    const a = await acquire()
    const b = await acquire()
    clock.advance(10)
    await a.report(limited('requests', 30_000))
    clock.advance(10)
    await b.report(limited('tokens', 1_000))
    const error = await refusal()
    expect(error.retryAfterMs).toBeGreaterThan(20_000)
    expect(error.limitedBy).toBe('requests')
  })

  it('an overload’s half-open provider slot, its wait over, does not blur the tokens cooldown after it', async () => {
    const { clock, admission, refusal, acquire } = gate()
    await admission.report(
      'acme',
      KEY_A,
      { ok: false, error: { kind: 'overloaded', status: 529, retryAfterMs: 5_000 } },
      { model: 'm' },
    )
    clock.advance(6_000)
    const probe = await acquire()
    await probe.report(limited('tokens', 30_000))
    expect((await refusal()).limitedBy).toBe('tokens')
  })

  it('a retired key does not count', async () => {
    const { admission, refusal } = gate()
    await admission.report('acme', KEY_B, limited('requests', 30_000), { model: 'm' })
    await admission.report('acme', KEY_B, { ok: false, error: { kind: 'auth', status: 401 } }, {})
    await admission.report('acme', KEY_A, limited('tokens', 30_000), { model: 'm' })
    expect((await refusal([KEY_A, KEY_B])).limitedBy).toBe('tokens')
  })

  it('its own cooldown read back from the store a round trip longer keeps its cause', async () => {
    const clock = new ManualClock(1_000)
    const store = new MemoryCooldownStore({ clock })
    const { admission, refusal } = gate({ store, clock })
    // A store a 50 ms round trip away: it starts the wait when the write
    // arrives, and answers what is left when the question arrives.
    const extend = store.extend.bind(store)
    store.extend = async (...args: Parameters<typeof store.extend>) => {
      clock.advance(25)
      const done = await extend(...args)
      clock.advance(25)
      return done
    }
    const remaining = store.remaining.bind(store)
    store.remaining = async (...args: Parameters<typeof store.remaining>) => {
      clock.advance(25)
      const left = await remaining(...args)
      clock.advance(25)
      return left
    }
    await admission.report('acme', KEY_A, limited('tokens', 30_000), { model: 'm' })
    expect((await refusal()).limitedBy).toBe('tokens')
  })

  it.each([
    ['after this process’s own cooldown ran out', 2_000, 30_000],
    ['while this process’s own shorter cooldown still runs', 0, 30_000],
    ['ending 0.8 s after this process’s own', 0, 1_800],
    ['after this process’s own ran out, though shorter than it was', 1_000, 900],
  ])(
    'another instance’s cooldown of another limit, %s: no cause',
    async (_when, gapMs, theirsMs) => {
      const clock = new ManualClock(1_000)
      const store = new MemoryCooldownStore({ clock })
      const here = gate({ store, clock })
      const there = gate({ store, clock })
      await here.admission.report('acme', KEY_A, limited('tokens', 1_000), { model: 'm' })
      clock.advance(gapMs)
      await there.admission.report('acme', KEY_A, limited('requests', theirsMs), { model: 'm' })
      // A budget shorter than any of these waits: refused, not waiting.
      const error = await here.refusal([KEY_A], 500)
      expect(error.retryAfterMs).toBeGreaterThan(theirsMs - 200)
      expect(error.limitedBy).toBeUndefined()
    },
  )

  it('its own write answered late (a stalled loop, an offline queue): still its own, cause kept', async () => {
    const clock = new ManualClock(1_000)
    const store = new MemoryCooldownStore({ clock })
    const { admission, refusal } = gate({ store, clock })
    // The write reaches the store 1.2 s after the limit was met, and is answered then.
    const extend = store.extend.bind(store)
    store.extend = async (...args: Parameters<typeof store.extend>) => {
      clock.advance(1_200)
      return extend(...args)
    }
    await admission.report('acme', KEY_A, limited('tokens', 5_000), { model: 'm' })
    expect((await refusal()).limitedBy).toBe('tokens')
  })

  it('its own write failed, another instance’s shorter cooldown in the store: its own end holds, and its cause', async () => {
    const clock = new ManualClock(1_000)
    const shared = new MemoryCooldownStore({ clock })
    let fail = true
    const flaky = Object.assign(Object.create(shared) as MemoryCooldownStore, {
      remaining: shared.remaining.bind(shared),
      extend: async (...args: Parameters<MemoryCooldownStore['extend']>) => {
        if (fail) {
          fail = false
          throw new Error('command timed out')
        }
        return shared.extend(...args)
      },
    })
    const here = gate({ store: flaky, clock })
    const there = gate({ store: shared, clock })
    await here.admission.report('acme', KEY_A, limited('tokens', 60_000), { model: 'm' })
    await there.admission.report('acme', KEY_A, limited('requests', 10_000), { model: 'm' })
    // Past the back-off after the failed write: the store is asked again.
    clock.advance(1_100)
    const error = await here.refusal()
    expect(error.retryAfterMs).toBeGreaterThan(50_000)
    expect(error.limitedBy).toBe('tokens')
  })
})

// What the same test (an end later than any this process set or wrote)
// says on `hourglass:llm:cooldown`: `learned` is another instance's news,
// never this process's own write read back.
describe('a cooldown learned from the store is announced once, as what it is', () => {
  /** The cooldown messages published while `run` runs. */
  async function messages(run: () => Promise<void>) {
    const seen: LlmCooldownMessage[] = []
    const on = (m: LlmCooldownMessage) => seen.push(m)
    llmChannels.cooldown.subscribe(on)
    try {
      await run()
    } finally {
      llmChannels.cooldown.unsubscribe(on)
    }
    return seen.map(({ state, durationMs, reason, learned }) => ({
      state,
      durationMs,
      reason,
      learned,
    }))
  }

  it('a finite retirement, its own write read back by the next acquire: one start, no learned one', async () => {
    const clock = new ManualClock(1_000)
    const { admission } = gate({
      store: new MemoryCooldownStore({ clock }),
      clock,
      retireMs: 60_000,
    })
    const seen = await messages(async () => {
      await admission.report('acme', KEY_A, { ok: false, error: { kind: 'auth', status: 401 } })
      clock.advance(10)
      for (let i = 0; i < 2; i++) {
        const deadline = Deadline.after(60_000, { clock })
        const permit = await admission.acquire({ provider: 'acme', keys: [KEY_A, KEY_B], deadline })
        expect(permit.key, 'the retired key was granted').toBe(KEY_B)
        permit.release()
      }
    })
    expect(seen).toEqual([
      { state: 'start', durationMs: 60_000, reason: 'retired: auth', learned: undefined },
    ])
    // Its retirement over, the key is free, as in a process that never read
    // it back: not held behind a probe as a cooldown nobody announced.
    clock.advance(60_000)
    const target = { provider: 'acme', keys: [KEY_A], maxWaitMs: 0 }
    const first = await admission.acquire(target)
    const second = await admission.acquire(target)
    expect([first.probe, second.probe]).toEqual([false, false])
    first.release()
    second.release()
  })

  it('another instance’s extension: learned as an extend, with its new length, once; its own extension read back is no news', async () => {
    const clock = new ManualClock(1_000)
    const store = new MemoryCooldownStore({ clock })
    const here = gate({ store, clock })
    const there = gate({ store, clock })
    const look = async () => {
      const deadline = Deadline.after(60_000, { clock })
      const permit = await here.admission.acquire({
        provider: 'acme',
        model: 'm',
        keys: [KEY_A, KEY_B],
        deadline,
      })
      expect(permit.key, 'the cooling key was granted').toBe(KEY_B)
      permit.release()
    }
    const seen = await messages(async () => {
      await there.admission.report('acme', KEY_A, limited('tokens', 1_000), { model: 'm' })
      await look()
      await there.admission.report('acme', KEY_A, limited('tokens', 30_000), { model: 'm' })
      await look()
      await look()
      clock.advance(1_000)
      await here.admission.report('acme', KEY_A, limited('tokens', 45_000), { model: 'm' })
      await look()
    })
    const learned = 'shared: learned from the store'
    const hint = 'rate_limited (429), server hint'
    expect(seen).toEqual([
      { state: 'start', durationMs: 1_000, reason: hint, learned: undefined },
      { state: 'start', durationMs: 1_000, reason: learned, learned: true },
      { state: 'extend', durationMs: 30_000, reason: hint, learned: undefined },
      { state: 'extend', durationMs: 30_000, reason: learned, learned: true },
      { state: 'extend', durationMs: 45_000, reason: hint, learned: undefined },
    ])
    expect(here.admission.forecast({ provider: 'acme', model: 'm', keys: [KEY_A] }).waitMs).toBe(
      45_000,
    )
  })

  it('its own write answered late, then another instance’s 429 on the key: learned, the key not granted', async () => {
    const clock = new ManualClock(1_000)
    const shared = new MemoryCooldownStore({ clock })
    // This process's store answers its write 900 ms after taking it (a busy
    // Redis, a stalled loop), within the default storeTimeoutMs (1000).
    const slow: CooldownStore = {
      remaining: (scope, ids) => shared.remaining(scope, ids),
      extend: async (scope, id, ms) => {
        const written = await shared.extend(scope, id, ms)
        clock.advance(900)
        return written
      },
    }
    const here = gate({ store: slow, clock })
    const there = gate({ store: shared, clock })
    const target = { provider: 'acme', keys: [KEY_A, KEY_B] }
    const seen = await messages(async () => {
      // The store's end: 2000; its answer came at 1900.
      await here.admission.report('acme', KEY_A, limited('tokens', 1_000))
      clock.advance(100)
      const probe = await here.admission.acquire({ ...target, keys: [KEY_A] })
      await probe.report?.({ ok: true })
      probe.release()
      clock.advance(100)
      // Another instance's real 429 on the key: the store's end 2700.
      await there.admission.report('acme', KEY_A, limited('tokens', 600))
      const permit = await here.admission.acquire(target)
      expect(permit.key, 'the key another instance met a 429 on was granted').toBe(KEY_B)
      permit.release()
    })
    expect(seen.at(-1)).toEqual({
      state: 'start',
      durationMs: 600,
      reason: 'shared: learned from the store',
      learned: true,
    })
  })
})
