import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { MemoryCooldownStore } from '../../src/admission/MemoryCooldownStore.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { RedisCooldownStore } from '../../src/admission/RedisCooldownStore.js'

async function refusalOf(request: unknown): Promise<Error> {
  const admission = new Admission({ logger: { warn: () => {} } })
  const outcome = await admission.acquire(request as never).then(
    (permit) => ({ granted: permit.key }),
    (e: unknown) => e,
  )
  expect(outcome).toBeInstanceOf(TypeError)
  return outcome as Error
}

function thrownBy(make: () => unknown): Error {
  try {
    make()
  } catch (e) {
    expect(e).toBeInstanceOf(TypeError)
    return e as Error
  }
  throw new Error('not refused')
}

describe('Admission.acquire refuses a request of the wrong shape, naming the field', () => {
  it('one key as a string is refused (it was spread into characters: a permit for key "s"), the key not shown', async () => {
    const error = await refusalOf({ provider: 'x', keys: 'sk-abcdef123' })
    expect(error.message).toBe(
      'Admission.acquire: keys must be an array of API keys (one key is [key]), got a string (not shown)',
    )
  })

  it('a key that is no string is refused naming its index (it threw from crypto)', async () => {
    const error = await refusalOf({ provider: 'x', keys: ['sk-1', null] })
    expect(error.message).toBe('Admission.acquire: keys[1] must be a string (an API key), got null')
  })

  it('a deadline that is no Deadline is refused (500 was taken as no deadline)', async () => {
    const error = await refusalOf({ provider: 'x', deadline: 500 })
    expect(error.message).toMatch(
      /^Admission\.acquire: deadline must be a Deadline \(Deadline\.after\(ms\)\), got 500/,
    )
  })

  it('a signal that is no AbortSignal, and a provider that is no string, are refused', async () => {
    expect((await refusalOf({ provider: 'x', signal: {} })).message).toMatch(
      /^Admission\.acquire: signal must be an AbortSignal/,
    )
    expect((await refusalOf({ provider: 5 })).message).toMatch(
      /^Admission\.acquire: provider must be a string/,
    )
  })

  it('the shapes it takes are granted', async () => {
    const admission = new Admission({ logger: { warn: () => {} } })
    expect((await admission.acquire({ provider: 'x', keys: ['sk-1', 'sk-2'] })).key).toBe('sk-1')
    expect((await admission.acquire({ provider: 'x' })).key).toBeUndefined()
    expect((await admission.acquire({ provider: 'x', keys: [] })).key).toBeUndefined()
  })
})

describe('ProviderLimits, RedisCooldownStore, Admission and MemoryCooldownStore refuse options that are none', () => {
  it('ProviderLimits without limits, or with a null entry, names them', () => {
    expect(thrownBy(() => new ProviderLimits({} as never)).message).toMatch(
      /^ProviderLimits: limits must be an object of provider name → \{ rpm, tpm \}/,
    )
    expect(thrownBy(() => new ProviderLimits({ limits: { a: null } } as never)).message).toBe(
      'ProviderLimits: limits["a"] must be an object { rpm, tpm }, got null',
    )
    expect(thrownBy(() => new ProviderLimits(undefined as never)).message).toMatch(
      /^ProviderLimits: options must be an object/,
    )
  })

  it('Admission and MemoryCooldownStore refuse a clock that is no Clock, naming it, as ProviderLimits does', () => {
    // `ManualClock` without `new` was taken, and the first call threw
    // "this[#clock].now is not a function", naming no option.
    expect(thrownBy(() => new Admission({ clock: ManualClock as never })).message).toBe(
      'Admission: clock must be a Clock (now, setTimeout, clearTimeout), got the class ManualClock, not an instance',
    )
    expect(thrownBy(() => new MemoryCooldownStore({ clock: ManualClock as never })).message).toBe(
      'MemoryCooldownStore: clock must be a Clock (now, setTimeout, clearTimeout), got the class ManualClock, not an instance',
    )
    // Admission's own store takes its clock: it names Admission, not its store.
    expect(thrownBy(() => new Admission({ clock: { now: () => 0 } as never })).message).toMatch(
      /^Admission: clock must be a Clock/,
    )
    // A Clock, or none, is taken.
    expect(new MemoryCooldownStore({ clock: new ManualClock() }).size).toBe(0)
    expect(new Admission({ clock: undefined })).toBeInstanceOf(Admission)
  })

  it('every taker of a clock reads null as none, the system clock, as core’s Deadline does', () => {
    // ProviderLimits alone refused `clock: null` ("clock must be a Clock …,
    // got null") where Admission and the stores took it as the default.
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } }, clock: null as never })
    expect(limits).toBeInstanceOf(ProviderLimits)
    expect(new Admission({ clock: null as never, limits })).toBeInstanceOf(Admission)
    expect(new MemoryCooldownStore({ clock: null as never }).size).toBe(0)
    // Anything else still names the taker and the option.
    expect(
      thrownBy(
        () => new ProviderLimits({ limits: { acme: { rpm: 1 } }, clock: ManualClock as never }),
      ).message,
    ).toBe(
      'ProviderLimits: clock must be a Clock (now, setTimeout, clearTimeout), got the class ManualClock, not an instance',
    )
  })

  // Used only once a 429 came back: `cooldownMs: 5000` (a number, as the
  // name reads) was taken, and the first 429 without a hint ended its call
  // with "this[#o].cooldownMs is not a function" — not retried, its fallback
  // never asked, no cooldown set. The limits in ProviderLimits' place failed
  // every call as "fullForMs is not a function"; a store with no methods was
  // read as a store down (warned, never shared).
  it.each([
    ['cooldownMs', 5000, /^Admission: cooldownMs must be a function \(input\) => ms/],
    [
      'cooldownMs',
      '5000',
      /^Admission: cooldownMs must be a function .*, got '5000' \(a string\)$/,
    ],
    ['random', 0.5, /^Admission: random must be a function returning \[0, 1\), got 0\.5$/],
    ['wallClock', 1_700_000_000_000, /^Admission: wallClock must be a function returning epoch ms/],
    ['limits', { openai: { rpm: 500 } }, /^Admission: limits must be a ProviderLimits/],
    ['store', {}, /^Admission: store must be a CooldownStore \(remaining and extend/],
  ] as const)('new Admission({ %s: %o }) is refused, naming it', (name, value, message) => {
    expect(thrownBy(() => new Admission({ [name]: value } as never)).message).toMatch(message)
  })

  it('null is none for those options too, and the shapes they take are taken', async () => {
    const admission = new Admission({
      cooldownMs: null,
      random: null,
      wallClock: null,
      limits: null,
      store: null,
    } as never)
    expect((await admission.acquire({ provider: 'x', keys: ['sk-1'] })).key).toBe('sk-1')
    const clock = new ManualClock()
    const built = new Admission({
      clock,
      cooldownMs: () => 5000,
      random: () => 0,
      wallClock: () => 0,
      limits: new ProviderLimits({ limits: { x: { rpm: 5 } }, clock }),
      store: new MemoryCooldownStore({ clock }),
    })
    expect((await built.acquire({ provider: 'x', keys: ['sk-1'] })).key).toBe('sk-1')
  })

  it('RedisCooldownStore without a client names it (null was accepted, every call then warned "store unavailable")', () => {
    for (const client of [null, 'redis://localhost:6379', {}]) {
      expect(thrownBy(() => new RedisCooldownStore(client as never)).message).toMatch(
        /^RedisCooldownStore: client must be a Redis client with evalsha and eval/,
      )
    }
  })
})
