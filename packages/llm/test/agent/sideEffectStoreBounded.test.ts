import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import {
  DEFAULT_MAX_SIDE_EFFECT_ENTRIES,
  MemorySideEffectStore,
} from '../../src/agent/MemorySideEffectStore.js'
import { sideEffect } from '../../src/agent/sideEffect.js'

const DAY_MS = 86_400_000
const record = (value: unknown) => ({ value, completedAtMs: 0 })

describe('MemorySideEffectStore is bounded', () => {
  it('many distinct keys: the size stays at maxEntries, the oldest completed runs go', () => {
    const store = new MemorySideEffectStore({ clock: new ManualClock(), maxEntries: 100 })
    for (let i = 0; i < 1_000; i++) store.set(`k${i}`, record(i), DAY_MS)
    expect(store.size).toBe(100)
    expect(store.get('k899')).toBeUndefined()
    expect(store.get('k900')?.value).toBe(900)
    expect(store.get('k999')?.value).toBe(999)
  })

  it('the default bound is 10 000 entries', () => {
    const store = new MemorySideEffectStore({ clock: new ManualClock() })
    expect(DEFAULT_MAX_SIDE_EFFECT_ENTRIES).toBe(10_000)
    for (let i = 0; i < 10_500; i++) store.set(`k${i}`, record(i), DAY_MS)
    expect(store.size).toBe(10_000)
    expect(store.get('k499')).toBeUndefined()
    expect(store.get('k500')?.value).toBe(500)
  })

  it('expired entries go before live ones, even behind a longer-lived entry', () => {
    const clock = new ManualClock()
    const store = new MemorySideEffectStore({ clock, maxEntries: 3 })
    store.set('long', record('long'), DAY_MS)
    store.set('a', record('a'), 1_000)
    store.set('b', record('b'), 1_000)
    clock.advance(2_000)
    store.set('c', record('c'), DAY_MS)
    // a and b expired behind `long`: they went, the oldest live entry stayed.
    expect(store.size).toBe(2)
    expect(store.get('long')?.value).toBe('long')
    // Nothing expired now: the oldest completed entry goes.
    store.set('d', record('d'), DAY_MS)
    store.set('e', record('e'), DAY_MS)
    expect(store.size).toBe(3)
    expect(store.get('long')).toBeUndefined()
    expect(['c', 'd', 'e'].map((k) => store.get(k)?.value)).toEqual(['c', 'd', 'e'])
  })

  it('a run in progress is never dropped: a second call joins it, the tool runs once', async () => {
    const store = new MemorySideEffectStore({ clock: new ManualClock(), maxEntries: 3 })
    let runs = 0
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const sendEmail = async () => {
      runs++
      await gate
      return `sent-${runs}`
    }
    const first = sideEffect('email', sendEmail, { store })
    // Many other calls complete meanwhile, far past the bound.
    for (let i = 0; i < 50; i++) await sideEffect(`other-${i}`, () => i, { store })
    expect(store.size).toBe(3)
    const second = sideEffect('email', sendEmail, { store })
    release()
    expect(await Promise.all([first, second])).toEqual(['sent-1', 'sent-1'])
    expect(runs).toBe(1)
    // Completed last, it is the newest entry: remembered.
    expect(await sideEffect('email', sendEmail, { store })).toBe('sent-1')
    expect(runs).toBe(1)
  })

  it('a completed run dropped for the bound runs again only after maxEntries other calls', async () => {
    const store = new MemorySideEffectStore({ clock: new ManualClock(), maxEntries: 10 })
    let runs = 0
    const tool = () => ++runs
    await sideEffect('k', tool, { store })
    for (let i = 0; i < 9; i++) await sideEffect(`other-${i}`, () => i, { store })
    expect(await sideEffect('k', tool, { store })).toBe(1)
    await sideEffect('other-9', () => 9, { store })
    expect(await sideEffect('k', tool, { store })).toBe(2)
  })

  it('the process-wide default store (sideEffect, runTurns without a store) is bounded too', async () => {
    // Unique keys: earlier files in this worker may have used the default store.
    const prefix = `bounded-default-${Math.random()}`
    let runs = 0
    const tool = () => ++runs
    await sideEffect(`${prefix}-k`, tool)
    // Concurrently: 10 000 awaited one by one took ~300 ms.
    await Promise.all(
      Array.from({ length: DEFAULT_MAX_SIDE_EFFECT_ENTRIES - 1 }, (_, i) =>
        sideEffect(`${prefix}-${i}`, () => i),
      ),
    )
    expect(await sideEffect(`${prefix}-k`, tool)).toBe(1)
    await sideEffect(`${prefix}-last`, () => 0)
    expect(await sideEffect(`${prefix}-k`, tool)).toBe(2)
  })

  it('refuses a bound that would remember nothing', () => {
    for (const maxEntries of [0, -1, Number.NaN]) {
      expect(() => new MemorySideEffectStore({ maxEntries })).toThrow(RangeError)
    }
    expect(() => new MemorySideEffectStore({ maxEntries: Number.POSITIVE_INFINITY })).not.toThrow()
  })

  it('refuses a clock that is no Clock, naming it (through sideEffect the first set() threw unseen)', () => {
    const clock = ManualClock as unknown as ManualClock
    expect(() => new MemorySideEffectStore({ clock })).toThrow(
      /MemorySideEffectStore: clock must be a Clock .*got the class ManualClock/,
    )
    expect(() => new MemorySideEffectStore({ clock: new ManualClock() })).not.toThrow()
  })
})
