import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { AdmissionPermit } from '../../src/admission/AdmissionPermit.js'
import {
  CooldownBook,
  MAX_IDLE_SLOTS,
  MAX_RETIRED_SLOTS,
  modelScope,
} from '../../src/admission/CooldownBook.js'
import type { CooldownStore } from '../../src/admission/CooldownStore.js'
import { KeyIdCache, MAX_CACHED_KEY_IDS } from '../../src/admission/KeyIdCache.js'
import { keyId } from '../../src/admission/keyId.js'
import { LatencyTracker, MAX_LATENCY_RINGS } from '../../src/admission/LatencyTracker.js'
import {
  MAX_STORED_COOLDOWNS,
  MemoryCooldownStore,
} from '../../src/admission/MemoryCooldownStore.js'
import { MAX_OWN_STORE_WRITES, OwnStoreWrites } from '../../src/admission/OwnStoreWrites.js'
import { type LlmCooldownMessage, llmChannels } from '../../src/channels.js'
import { isKeysRetired } from '../../src/errors/KeysRetiredError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

/*
 * A service that builds adapters from its clients' input (their own keys,
 * model names passed through) shares the process-wide default admission
 * with every other call: what admission keeps per key and per model must
 * not grow with every name it is ever shown. Idle state goes; a cooldown,
 * a retirement or a probe never does (dropping one would lift it).
 */

/** Distinct names shown: each kind of state is swept several times over. */
const N = 4_000
const quiet = { warn: () => {} }
const limited = {
  ok: false,
  error: { kind: 'rate_limited', status: 429, retryAfterMs: 60_000 },
} as const
const rejected = { ok: false, error: { kind: 'auth', status: 401 } } as const

/** The book of cooldowns as `Admission` builds it, on a manual clock. */
/** What `admission` grants at once of `sk-bad-first` (asked first) and `sk-good`. */
async function badOrGood(admission: Admission, clock: ManualClock): Promise<AdmissionPermit> {
  using deadline = Deadline.after(10_000, { clock })
  return await admission.acquire({
    provider: 'openai',
    keys: ['sk-bad-first', 'sk-good'],
    deadline,
    maxWaitMs: 0,
  })
}

function book(): CooldownBook {
  const clock = new ManualClock(1_000)
  return new CooldownBook({
    store: new MemoryCooldownStore({ clock }),
    clock,
    wall: () => 1_700_000_000_000,
    cooldownMs: () => 1_000,
    retireMs: Number.POSITIVE_INFINITY,
    maxRetryAfterMs: 60_000,
    latency: new LatencyTracker(),
    logger: quiet,
  })
}

describe('admission forgets idle keys and models, never a cooldown', () => {
  it(`${N} distinct models answered: the latency rings stay under their cap, the provider's and a model used now and then kept`, () => {
    const latency = new LatencyTracker()
    let rings = 0
    for (let i = 0; i < N; i++) {
      const model = i % 100 === 0 ? 'hot' : `client-model-${i}`
      // What admission records of a success: the provider's latency, and the model's there.
      latency.record('openai', 50)
      latency.record(modelScope('openai', model), model === 'hot' ? 700 : 50)
      rings = Math.max(rings, latency.size)
    }
    expect(rings).toBeLessThanOrEqual(MAX_LATENCY_RINGS)
    expect(latency.estimate(modelScope('openai', 'hot'))).toBe(700)
    expect(latency.estimate('openai')).toBeDefined()
  })

  it(`${N} distinct models, then ${N} distinct keys: the slots stay under their cap`, async () => {
    const cooldowns = book()
    let slots = 0
    for (let i = 0; i < 2 * N; i++) {
      const [key, model] = i < N ? ['k1', `client-model-${i}`] : [`k${i}`, 'gpt-4o']
      cooldowns.lane('openai', 'openai', key, model)
      // One request per turn of the event loop, as a service sees them.
      await undefined
      slots = Math.max(slots, cooldowns.size)
    }
    expect(slots).toBeLessThanOrEqual(MAX_IDLE_SLOTS)
  })

  it(`through Admission: a cooling model, a half-open one and a retired key outlast thousands of idle models and keys`, async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, logger: quiet })
    await admission.report('openai', 'sk-hot-00000001', limited, { model: 'cooling' })
    await admission.report('openai', 'sk-hot-00000001', limited, { model: 'half-open' })
    await admission.report('openai', 'sk-bad-00000001', rejected)
    // `half-open`'s cooldown is over, but no answer has come since: its next call is the probe.
    clock.advance(30_000)
    await admission.report('openai', 'sk-hot-00000001', limited, { model: 'cooling' })
    clock.advance(30_001)
    // Enough new models and keys to sweep the idle slots (a slot per model, two per key).
    for (let i = 0; i < MAX_IDLE_SLOTS; i++) {
      admission.forecast({ provider: 'openai', keys: ['sk-hot-00000001'], model: `m-${i}` })
      if (i % 4 === 0) admission.forecast({ provider: 'openai', keys: [`sk-user-${i}`] })
      await undefined
    }
    using deadline = Deadline.after(10_000, { clock })
    const ask = (key: string, model?: string) =>
      admission
        .acquire({ provider: 'openai', keys: [key], model, deadline, maxWaitMs: 0 })
        .catch((e: unknown) => e)
    expect(isRateLimited(await ask('sk-hot-00000001', 'cooling'))).toBe(true)
    expect(isKeysRetired(await ask('sk-bad-00000001'))).toBe(true)
    const probe = await ask('sk-hot-00000001', 'half-open')
    expect(probe).toMatchObject({ probe: true })
    // Another model on the hot key was never held back.
    expect(await ask('sk-hot-00000001', 'other')).toMatchObject({ probe: false })
  })

  it('a key rejected while its request was in flight stays retired, though its idle slots were dropped meanwhile', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, logger: quiet })
    using deadline = Deadline.after(10_000, { clock })
    const permit = await admission.acquire({
      provider: 'openai',
      keys: ['sk-late-0000001'],
      model: 'gpt-4o',
      deadline,
    })
    // Meanwhile other clients' models fill the book, and its idle slots are swept.
    for (let i = 0; i < MAX_IDLE_SLOTS; i++) {
      admission.forecast({ provider: 'openai', keys: ['sk-other-000001'], model: `m-${i}` })
      await undefined
    }
    await permit.report(rejected)
    const again = await admission
      .acquire({ provider: 'openai', keys: ['sk-late-0000001'], model: 'gpt-4o', deadline })
      .catch((e: unknown) => e)
    expect(isKeysRetired(again)).toBe(true)
  })

  it(`the key ids admission remembers: at most ${MAX_CACHED_KEY_IDS} raw keys, each still given its id`, () => {
    const ids = new KeyIdCache()
    let held = 0
    for (let i = 0; i < 5 * MAX_CACHED_KEY_IDS; i++) {
      ids.id(`sk-user-${i}`)
      held = Math.max(held, ids.size)
    }
    expect(held).toBeLessThanOrEqual(MAX_CACHED_KEY_IDS)
    for (const key of ['sk-user-0', 'sk-user-4999', undefined]) expect(ids.id(key)).toBe(keyId(key))
  })

  it(`${MAX_IDLE_SLOTS + MAX_RETIRED_SLOTS} distinct bad keys, each rejected (retired until restart): the slots stay under their cap`, async () => {
    const cooldowns = book()
    let slots = 0
    for (let i = 0; i < MAX_IDLE_SLOTS + MAX_RETIRED_SLOTS; i++) {
      // A bring-your-own-key client's key, passed through and rejected.
      await cooldowns.apply(
        cooldowns.lane('openai', 'openai', `k${i}`, undefined),
        rejected,
        undefined,
        undefined,
      )
      slots = Math.max(slots, cooldowns.size)
    }
    expect(slots).toBeLessThanOrEqual(MAX_IDLE_SLOTS)
  })

  it(`through Admission: past ${MAX_RETIRED_SLOTS} bad keys the oldest is tried once more, then retired again; the latest stay retired`, async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, logger: quiet })
    using deadline = Deadline.after(10_000, { clock })
    const ask = (key: string) =>
      admission
        .acquire({ provider: 'openai', keys: [key], deadline, maxWaitMs: 0 })
        .catch((e: unknown) => e)
    await admission.report('openai', 'sk-bad-first', rejected)
    expect(isKeysRetired(await ask('sk-bad-first'))).toBe(true)
    for (let i = 0; i < MAX_RETIRED_SLOTS; i++) {
      await admission.report('openai', `sk-bad-${i}`, rejected)
    }
    // Forgotten: one more real request goes, and its 401 retires the key again.
    const permit = await ask('sk-bad-first')
    expect(permit).toMatchObject({ probe: false })
    await (permit as AdmissionPermit).report(rejected)
    expect(isKeysRetired(await ask('sk-bad-first'))).toBe(true)
    // Every other key rejected since is still refused with nothing sent.
    for (const i of [1, MAX_RETIRED_SLOTS >> 1, MAX_RETIRED_SLOTS - 1]) {
      expect(isKeysRetired(await ask(`sk-bad-${i}`))).toBe(true)
    }
  })

  it(`a finite retirement forgotten past ${MAX_RETIRED_SLOTS} and its idle slot swept: still tried once more, its own write in the store no other instance's cooldown`, async () => {
    const clock = new ManualClock(1_000)
    // Finite: written to the store (the default, in memory), which still holds it.
    const admission = new Admission({ clock, logger: quiet, retireMs: 600_000 })
    const learned: unknown[] = []
    const on = (m: LlmCooldownMessage) => {
      if (m.learned) learned.push(m)
    }
    llmChannels.cooldown.subscribe(on)
    try {
      await admission.report('openai', 'sk-bad-first', rejected)
      for (let i = 0; i < MAX_RETIRED_SLOTS; i++) {
        await admission.report('openai', `sk-bad-${i}`, rejected)
      }
      // Forgotten, its slot idle: new keys fill the book and the sweep drops it.
      for (let i = 0; i < MAX_IDLE_SLOTS - MAX_RETIRED_SLOTS; i++) {
        admission.forecast({ provider: 'openai', keys: [`sk-user-${i}`] })
      }
      await undefined
      clock.advance(10)
      const permit = await badOrGood(admission, clock)
      expect(permit.key, 'held as another instance’s cooldown').toBe('sk-bad-first')
      expect(permit.probe).toBe(false)
      permit.release()
    } finally {
      llmChannels.cooldown.unsubscribe(on)
    }
    expect(learned).toEqual([])
  })

  it(`this process's own store writes: at most ${MAX_OWN_STORE_WRITES} remembered, the ended go first, the latest kept`, () => {
    const own = new OwnStoreWrites(50)
    // One long write, then more short ones than the cap, all ended by the last.
    own.wrote('openai\u0000k-long', 1_000, 600_000, 1_000)
    let held = 0
    for (let i = 0; i < 2 * MAX_OWN_STORE_WRITES; i++) {
      own.wrote(`openai\u0000k${i}`, 1_000 + i, 1_000, 1_000 + i)
      held = Math.max(held, own.size)
    }
    expect(held).toBeLessThanOrEqual(MAX_OWN_STORE_WRITES)
    expect(own.isOwn('openai\u0000k-long', 601_000)).toBe(true)
    const last = 2 * MAX_OWN_STORE_WRITES - 1
    expect(own.isOwn(`openai\u0000k${last}`, 2_000 + last)).toBe(true)
    // Later than its least end by more than the slack: another instance's.
    expect(own.isOwn(`openai\u0000k${last}`, 2_051 + last)).toBe(false)
    // Well before it: another instance's too, written after the store lost this one's.
    expect(own.isOwn('openai\u0000k-long', 31_000)).toBe(false)
  })

  it('a retirement "for good" (retireMs 1e20) in a store that caps what it keeps (RedisCooldownStore: 10¹⁵ ms), read back: its own, not another instance\'s', async () => {
    const clock = new ManualClock(1_000)
    const memory = new MemoryCooldownStore({ clock })
    const capping: CooldownStore = {
      remaining: (scope, ids) => memory.remaining(scope, ids),
      extend: (scope, id, ms) => memory.extend(scope, id, Math.min(ms, 1e15)),
    }
    const admission = new Admission({ clock, logger: quiet, retireMs: 1e20, store: capping })
    const learned: LlmCooldownMessage[] = []
    const on = (m: LlmCooldownMessage) => {
      if (m.learned) learned.push(m)
    }
    llmChannels.cooldown.subscribe(on)
    try {
      await admission.report('openai', 'sk-bad-first', rejected)
      await undefined
      clock.advance(10)
      const permit = await badOrGood(admission, clock)
      permit.release()
      expect(permit.key).toBe('sk-good')
    } finally {
      llmChannels.cooldown.unsubscribe(on)
    }
    expect(learned).toEqual([])
  })

  it("this process's own write read back a little early (a store's clock apart from ours): its own, within a thousandth of its wait", () => {
    const own = new OwnStoreWrites(50)
    own.wrote('openai\u0000k', 1_000, 3_600_000, 1_000)
    expect(own.isOwn('openai\u0000k', 3_601_000 - 200)).toBe(true)
    expect(own.isOwn('openai\u0000k', 3_601_000 - 3_700)).toBe(false)
  })

  it(`past ${MAX_OWN_STORE_WRITES} live writes, those ending soonest are forgotten, not the oldest: a long retirement's is kept`, () => {
    const own = new OwnStoreWrites(50)
    own.wrote('openai\u0000k-retired', 1_000, 3_600_000, 1_000)
    for (let i = 0; i < MAX_OWN_STORE_WRITES; i++) {
      own.wrote(`openai\u0000k${i}`, 1_000 + i, 60_000, 1_000 + i)
    }
    expect(own.size).toBeLessThanOrEqual(MAX_OWN_STORE_WRITES)
    expect(own.isOwn('openai\u0000k-retired', 3_601_000)).toBe(true)
    expect(own.isOwn('openai\u0000k0', 61_000)).toBe(false)
  })

  it("another instance's cooldown on a key whose retirement here was forgotten, after the store lost its entries: not granted here", async () => {
    const clock = new ManualClock(1_000)
    let store = new MemoryCooldownStore({ clock })
    const restartable: CooldownStore = {
      remaining: (scope, ids) => store.remaining(scope, ids),
      extend: (scope, id, ms) => store.extend(scope, id, ms),
    }
    const here = new Admission({ clock, logger: quiet, retireMs: 3_600_000, store: restartable })
    const there = new Admission({ clock, logger: quiet, store: restartable })
    await here.report('openai', 'sk-bad-first', rejected)
    for (let i = 0; i < MAX_RETIRED_SLOTS; i++) await here.report('openai', `sk-bad-${i}`, rejected)
    clock.advance(60_000)
    // The store restarts empty (Redis without persistence, FLUSHDB, an eviction).
    store = new MemoryCooldownStore({ clock })
    await there.report('openai', 'sk-bad-first', {
      ok: false,
      error: { kind: 'rate_limited', status: 429, retryAfterMs: 30_000, limitedBy: 'requests' },
    })
    clock.advance(10)
    const permit = await badOrGood(here, clock)
    permit.release()
    expect(permit.key, 'another instance’s 30 s cooldown taken for this one’s old write').toBe(
      'sk-good',
    )
  })

  it(`the default store: ${2 * MAX_STORED_COOLDOWNS} distinct cooldowns run out unread, the entries stay under their cap, the live ones are kept`, async () => {
    const clock = new ManualClock(1_000)
    const store = new MemoryCooldownStore({ clock })
    const live: string[] = []
    let held = 0
    for (let i = 0; i < 2 * MAX_STORED_COOLDOWNS; i++) {
      // Most cool for a second and are never read again; one in eight for an hour.
      const long = i % 8 === 0
      if (long) live.push(`k${i}`)
      await store.extend('openai', `k${i}`, long ? 3_600_000 : 1_000)
      clock.advance(10)
      held = Math.max(held, store.size)
    }
    expect(held).toBeLessThanOrEqual(MAX_STORED_COOLDOWNS)
    // Every live cooldown is still there, for the time it was given.
    const left = await store.remaining('openai', live)
    expect(left).toEqual(live.map((_, i) => 3_600_000 - 10 * (2 * MAX_STORED_COOLDOWNS - 8 * i)))
    // And past the cap, with most entries live, none is dropped: the sweep waits for more.
    for (let i = 0; i < MAX_STORED_COOLDOWNS; i++) {
      await store.extend('openai', `more-${i}`, 3_600_000)
    }
    const more = await store.remaining(
      'openai',
      Array.from({ length: MAX_STORED_COOLDOWNS }, (_, i) => `more-${i}`),
    )
    expect(more.every((ms) => ms > 0)).toBe(true)
  })
})
