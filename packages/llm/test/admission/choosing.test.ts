import { type Clock, Deadline, ManualClock } from '@hourglass/core'
import { beforeEach, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { AdmissionPermit } from '../../src/admission/AdmissionPermit.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

const KEY = 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA'
let clock: ManualClock
beforeEach(() => {
  clock = new ManualClock(1_000)
})

function admission(options: ConstructorParameters<typeof Admission>[0] = {}) {
  return new Admission({
    clock,
    staggerMs: 0,
    defaultNeededMs: 0,
    logger: { warn: () => {} },
    ...options,
  })
}
const limited = (retryAfterMs?: number) => ({
  ok: false as const,
  error: { kind: 'rate_limited' as const, status: 429, retryAfterMs },
})

describe('what admission tells a caller choosing between models', () => {
  it('forecasts a target: the wait until a key is free and the model’s recent latency (none before a success)', async () => {
    const gate = admission()
    const target = { provider: 'acme', keys: [KEY], model: 'big', endpoint: 'https://a.example/v1' }
    expect(gate.forecast(target)).toEqual({ waitMs: 0, latencyMs: undefined })
    await gate.report('acme', KEY, limited(700), target)
    for (const ms of [100, 200, 300])
      await gate.report('acme', KEY, { ok: true, latencyMs: ms }, target)
    expect(gate.forecast(target)).toEqual({ waitMs: 700, latencyMs: 300 })
    // Latencies are per model: another model at the same provider has no history.
    expect(gate.forecast({ ...target, model: 'small' }).latencyMs).toBeUndefined()
    clock.advance(700)
    expect(gate.forecast(target).waitMs).toBe(0)
  })

  it('keeps one provider name at two base URLs apart (trailing slashes aside)', async () => {
    const gate = admission()
    await gate.report('openai', KEY, limited(5000), { endpoint: 'https://one.example/v1/' })
    expect(
      gate.forecast({ provider: 'openai', keys: [KEY], endpoint: 'https://one.example/v1' }).waitMs,
    ).toBe(5000)
    expect(
      gate.forecast({ provider: 'openai', keys: [KEY], endpoint: 'https://two.example/v1' }).waitMs,
    ).toBe(0)
    expect(gate.forecast({ provider: 'openai', keys: [KEY] }).waitMs).toBe(0)
  })

  it('refuses at once a wait longer than the caller’s maxWaitMs, though it would fit the deadline', async () => {
    const gate = admission()
    await gate.report('acme', KEY, limited(500))
    using deadline = Deadline.after(10_000, { clock })
    const error = await gate
      .acquire({ provider: 'acme', keys: [KEY], deadline, maxWaitMs: 300, hasFallback: true })
      .catch((e: unknown) => e)
    expect(isRateLimited(error)).toBe(true)
    expect(String((error as Error).message)).toMatch(
      /cooling for 500 ms or more; the caller takes waits of at most 300 ms/,
    )
    expect(clock.now()).toBe(1_000)
  })

  it('counts a burst of 429s from requests sent before the cooldown began as one strike', async () => {
    const waits: number[] = []
    const gate = admission({ cooldownMs: ({ strikes }) => 1000 * strikes })
    using deadline = Deadline.after(60_000, { clock })
    // Five requests go out together, before anyone knows of the limit.
    const permits = await Promise.all(
      Array.from({ length: 5 }, () => gate.acquire({ provider: 'acme', keys: [KEY], deadline })),
    )
    clock.advance(10)
    for (const permit of permits) {
      await permit.report(limited())
      waits.push(gate.forecast({ provider: 'acme', keys: [KEY] }).waitMs)
    }
    // One strike: 1000 ms from the first report, not 5000 ms by the fifth.
    expect(waits).toEqual([1000, 1000, 1000, 1000, 1000])
  })

  it('uses a caller’s own wait for a limit without a server hint', async () => {
    const gate = admission()
    await gate.report('acme', KEY, { ...limited(), cooldownMs: 40 })
    expect(gate.forecast({ provider: 'acme', keys: [KEY] }).waitMs).toBe(40)
  })
})

/**
 * A manual clock that fires timers due at the same time newest first — as
 * Node may (its timers are grouped by duration, not by creation).
 */
class NewestFirstClock implements Clock {
  #now = 1_000
  #seq = 0
  readonly #timers = new Map<number, { at: number; seq: number; callback: () => void }>()
  now(): number {
    return this.#now
  }
  setTimeout(callback: () => void, ms: number): unknown {
    const seq = ++this.#seq
    this.#timers.set(seq, { at: this.#now + Math.max(0, ms), seq, callback })
    return seq
  }
  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number)
  }
  /** Fires what is due at `now + ms`, newest first, letting each timer's continuations run. */
  async advance(ms: number): Promise<void> {
    this.#now += ms
    for (;;) {
      const due = [...this.#timers.values()].filter((t) => t.at <= this.#now)
      const next = due.sort((a, b) => a.at - b.at || b.seq - a.seq)[0]
      if (next === undefined) return
      this.#timers.delete(next.seq)
      next.callback()
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }
}

describe('who goes first when a cooldown ends', () => {
  it('the caller that has waited longest sends the probe, whichever timer fires first', async () => {
    const newestFirst = new NewestFirstClock()
    const gate = new Admission({
      clock: newestFirst,
      staggerMs: 0,
      defaultNeededMs: 0,
      logger: { warn: () => {} },
    })
    await gate.report('acme', KEY, limited(1000))
    using deadline = Deadline.after(60_000, { clock: newestFirst })
    const granted: Array<{ caller: number; permit: AdmissionPermit }> = []
    for (let caller = 0; caller < 3; caller++) {
      void gate
        .acquire({ provider: 'acme', keys: [KEY], deadline })
        .then((permit) => granted.push({ caller, permit }))
    }
    await new Promise<void>((resolve) => setImmediate(resolve))
    await newestFirst.advance(1000)
    expect(granted.map((g) => [g.caller, g.permit.probe])).toEqual([[0, true]])
  })
  it('a caller that began waiting earlier (waitingSince: back after its own 429) goes before one that asked first', async () => {
    const gate = admission()
    await gate.report('acme', KEY, limited(1000))
    using deadline = Deadline.after(60_000, { clock })
    const granted: string[] = []
    void gate
      .acquire({ provider: 'acme', keys: [KEY], deadline })
      .then(() => granted.push('asked first'))
    void gate
      .acquire({ provider: 'acme', keys: [KEY], deadline, waitingSince: 500 })
      .then((permit) =>
        granted.push(permit.probe ? 'waiting since 500: probe' : 'waiting since 500'),
      )
    await new Promise<void>((resolve) => setImmediate(resolve))
    clock.advance(1000)
    for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve))
    expect(granted).toEqual(['waiting since 500: probe'])
  })
})
