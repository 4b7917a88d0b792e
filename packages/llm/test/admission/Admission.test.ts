import diagnostics from 'node:diagnostics_channel'
import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { AdmissionPermit } from '../../src/admission/AdmissionPermit.js'
import { defaultCooldownMs } from '../../src/admission/defaultCooldownMs.js'
import { keyId } from '../../src/admission/keyId.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import {
  type LlmAdmissionMessage,
  type LlmCooldownMessage,
  llmChannels,
} from '../../src/channels.js'
import { isKeysRetired } from '../../src/errors/KeysRetiredError.js'
import { isRateLimited, type RateLimitedError } from '../../src/errors/RateLimitedError.js'

const KEY_A = 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA'
const KEY_B = 'sk-live-BBBBBBBBBBBBBBBBBBBBBBBB'
const limited = (retryAfterMs?: number) => ({
  ok: false as const,
  error: { kind: 'rate_limited' as const, status: 429, retryAfterMs },
})

/** Let settled promises run their callbacks (no time passes on the manual clock). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

let clock: ManualClock
const events: Array<{ channel: string; message: unknown }> = []
const onCooldown = (message: unknown) => events.push({ channel: 'cooldown', message })
const onAdmission = (message: unknown) => events.push({ channel: 'admission', message })

beforeEach(() => {
  clock = new ManualClock(1_000)
  events.length = 0
  diagnostics.subscribe(llmChannels.cooldown.name, onCooldown)
  diagnostics.subscribe(llmChannels.admission.name, onAdmission)
})
afterEach(() => {
  diagnostics.unsubscribe(llmChannels.cooldown.name, onCooldown)
  diagnostics.unsubscribe(llmChannels.admission.name, onAdmission)
})

function admission(options: ConstructorParameters<typeof Admission>[0] = {}) {
  return new Admission({
    clock,
    wallClock: () => 1_700_000_000_000 + clock.now(),
    staggerMs: 0,
    defaultNeededMs: 0,
    logger: { warn: () => {} },
    ...options,
  })
}

function admissionActions(): string[] {
  return events
    .filter((e) => e.channel === 'admission')
    .map((e) => (e.message as LlmAdmissionMessage).action)
}
function admissionCauses(): string[] {
  return events
    .filter((e) => e.channel === 'admission')
    .map((e) => (e.message as LlmAdmissionMessage).cause)
}

describe('Admission', () => {
  it('refuses at once, with when to retry, a call whose deadline ends before the cooldown does', async () => {
    const gate = admission()
    await gate.report('acme', KEY_A, limited(1000))
    const deadline = Deadline.after(500, { clock })
    const error = (await gate
      .acquire({ provider: 'acme', keys: [KEY_A], deadline, model: 'm1' })
      .catch((e: unknown) => e)) as RateLimitedError
    expect(isRateLimited(error)).toBe(true)
    expect(error.provider).toBe('acme')
    expect(error.retryAfterMs).toBe(1000)
    expect(error.retryAtMs).toBe(1_700_000_000_000 + clock.now() + 1000)
    expect(clock.now()).toBe(1_000) // no time passed: it did not wait to find out
    expect(clock.pendingTimers).toBe(1) // only the deadline's own timer
    expect(admissionActions()).toEqual(['fail'])
    expect(admissionCauses()).toEqual(['cooldown'])
    deadline.dispose()
  })

  it('waits only when the cooldown ends early enough for the call to finish (deadline minus needed time)', async () => {
    const gate = admission()
    await gate.report('acme', KEY_A, limited(300))
    const tight = Deadline.after(400, { clock })
    await expect(
      gate.acquire({ provider: 'acme', keys: [KEY_A], deadline: tight, neededMs: 200 }),
    ).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 300 })

    const roomy = Deadline.after(600, { clock })
    let permit: AdmissionPermit | undefined
    void gate
      .acquire({ provider: 'acme', keys: [KEY_A], deadline: roomy, neededMs: 200 })
      .then((p) => {
        permit = p
      })
    await flush()
    clock.advance(299)
    await flush()
    expect(permit).toBeUndefined()
    clock.advance(1)
    await flush()
    expect(permit?.key).toBe(KEY_A)
    expect(permit?.waitedMs).toBe(300)
    expect(permit?.probe).toBe(true)
    tight.dispose()
    roomy.dispose()
  })

  it('prefers a free second key to waiting for the first', async () => {
    const gate = admission()
    await gate.report('acme', KEY_A, limited(300))
    const deadline = Deadline.after(10_000, { clock })
    const permit = await gate.acquire({ provider: 'acme', keys: [KEY_A, KEY_B], deadline })
    expect(permit.key).toBe(KEY_B)
    expect(permit.waitedMs).toBe(0)
    expect(admissionActions()).toEqual(['switch-key'])
    expect(admissionCauses()).toEqual(['cooldown'])
    deadline.dispose()
  })

  it('lets exactly one call probe when a cooldown ends; the others follow its success in the order they came, spread over staggerMs', async () => {
    const gate = admission({ staggerMs: 100 })
    await gate.report('acme', KEY_A, limited(1000))
    const deadline = Deadline.after(10_000, { clock })
    const granted: Array<{ at: number; permit: AdmissionPermit; caller: number }> = []
    for (let caller = 0; caller < 5; caller++) {
      void gate
        .acquire({ provider: 'acme', keys: [KEY_A], deadline, neededMs: 50 })
        .then((permit) => granted.push({ at: clock.now(), permit, caller }))
    }
    await flush()
    clock.advance(1000)
    await flush()
    expect(granted).toHaveLength(1)
    expect(granted[0]?.permit.probe).toBe(true)
    clock.advance(500) // the probe is slow: still nobody else goes
    await flush()
    expect(granted).toHaveLength(1)

    await granted[0]?.permit.report({ ok: true, latencyMs: 40 })
    await flush()
    expect(granted).toHaveLength(2) // the longest waiting goes at once; the rest are staggered
    for (let step = 0; step < 10; step++) {
      clock.advance(10)
      await flush()
    }
    expect(granted).toHaveLength(5)
    // The probe answered at 2500; the four followers were due 0, 25, 50 and 75 ms later
    // (each seen at the next 10 ms step), in the order they came.
    expect(granted.slice(1).map((g) => g.at - 2500)).toEqual([0, 30, 50, 80])
    expect(granted.map((g) => g.caller)).toEqual([0, 1, 2, 3, 4])
    expect(granted.slice(1).every((g) => !g.permit.probe)).toBe(true)
    const cooldowns = events
      .filter((e) => e.channel === 'cooldown')
      .map((e) => (e.message as LlmCooldownMessage).state)
    expect(cooldowns).toEqual(['start', 'end'])
    deadline.dispose()
  })

  it('extends the cooldown when the probe fails, sends nothing else, and refuses callers it no longer fits', async () => {
    const gate = admission()
    await gate.report('acme', KEY_A, limited(1000))
    const long = Deadline.after(10_000, { clock })
    const short = Deadline.after(2_500, { clock })
    const outcomes: string[] = []
    const track = (name: string, p: Promise<AdmissionPermit>) =>
      p.then(
        (permit) => {
          outcomes.push(`${name}:${permit.probe ? 'probe' : 'go'}`)
          return permit
        },
        (error: unknown) => {
          outcomes.push(`${name}:${(error as { code?: string }).code}`)
        },
      )
    const probe = track('p', gate.acquire({ provider: 'acme', keys: [KEY_A], deadline: long }))
    void track('long', gate.acquire({ provider: 'acme', keys: [KEY_A], deadline: long }))
    void track('short', gate.acquire({ provider: 'acme', keys: [KEY_A], deadline: short }))
    await flush()
    clock.advance(1000)
    await flush()
    expect(outcomes).toEqual(['p:probe'])
    const permit = (await probe) as AdmissionPermit
    await permit.report(limited(2000))
    await flush()
    // 2000 ms more does not fit the short call's 1500 ms left: refused at once; the long one keeps waiting.
    expect(outcomes).toEqual(['p:probe', 'short:RATE_LIMITED'])
    clock.advance(1999)
    await flush()
    expect(outcomes).toHaveLength(2)
    clock.advance(1)
    await flush()
    expect(outcomes).toEqual(['p:probe', 'short:RATE_LIMITED', 'long:probe'])
    const states = events
      .filter((e) => e.channel === 'cooldown')
      .map((e) => (e.message as LlmCooldownMessage).state)
    expect(states).toEqual(['start', 'extend'])
    long.dispose()
    short.dispose()
  })

  it('hands the probe to the next caller when the probe is not sent or says nothing about the limit', async () => {
    const gate = admission()
    await gate.report('acme', KEY_A, limited(100))
    const deadline = Deadline.after(10_000, { clock })
    clock.advance(100)
    const first = await gate.acquire({ provider: 'acme', keys: [KEY_A], deadline })
    expect(first.probe).toBe(true)
    let second: AdmissionPermit | undefined
    void gate.acquire({ provider: 'acme', keys: [KEY_A], deadline }).then((p) => {
      second = p
    })
    await flush()
    expect(second).toBeUndefined()
    first.release()
    await flush()
    expect(second?.probe).toBe(true)
    let third: AdmissionPermit | undefined
    void gate.acquire({ provider: 'acme', keys: [KEY_A], deadline }).then((p) => {
      third = p
    })
    await flush()
    expect(third).toBeUndefined()
    await second?.report({ ok: false, error: { kind: 'network', status: 0 } })
    await flush()
    expect(third?.probe).toBe(true)
    deadline.dispose()
  })

  it('retires a key on an auth failure and fails with KEYS_RETIRED when no key is left', async () => {
    const gate = admission()
    await gate.report('acme', KEY_A, { ok: false, error: { kind: 'auth', status: 401 } })
    const deadline = Deadline.after(10_000, { clock })
    const permit = await gate.acquire({ provider: 'acme', keys: [KEY_A, KEY_B], deadline })
    expect(permit.key).toBe(KEY_B)
    await permit.report({ ok: false, error: { kind: 'auth', status: 403 } })
    const error = await gate
      .acquire({ provider: 'acme', keys: [KEY_A, KEY_B], deadline })
      .catch((e: unknown) => e)
    expect(isKeysRetired(error)).toBe(true)
    expect(String((error as Error).message)).not.toContain('sk-live')
    clock.advance(24 * 3_600_000)
    await expect(
      gate.acquire({ provider: 'acme', keys: [KEY_A], deadline: Deadline.after(10, { clock }) }),
    ).rejects.toMatchObject({ code: 'KEYS_RETIRED' })
    deadline.dispose()
  })

  it('uses the injected backoff, fed the strike count, when the provider gave no hint', async () => {
    const seen: number[] = []
    const gate = admission({
      cooldownMs: ({ strikes }) => {
        seen.push(strikes)
        return 100 * strikes
      },
    })
    await gate.report('acme', KEY_A, limited())
    await expect(
      gate.acquire({ provider: 'acme', keys: [KEY_A], deadline: Deadline.after(50, { clock }) }),
    ).rejects.toMatchObject({ retryAfterMs: 100 })
    clock.advance(100)
    await gate.report('acme', KEY_A, limited())
    await expect(
      gate.acquire({ provider: 'acme', keys: [KEY_A], deadline: Deadline.after(50, { clock }) }),
    ).rejects.toMatchObject({ retryAfterMs: 200 })
    expect(seen).toEqual([1, 2])
  })

  it("ends a wait when the deadline's signal aborts, leaving no timer and no listener", async () => {
    const gate = admission()
    await gate.report('acme', KEY_A, limited(1000))
    const deadline = Deadline.after(5_000, { clock })
    const waiting = gate.acquire({ provider: 'acme', keys: [KEY_A], deadline })
    await flush()
    expect(clock.pendingTimers).toBe(2) // the deadline's and the wait's
    deadline.cancel(new Error('client left'))
    await expect(waiting).rejects.toThrow('client left')
    expect(clock.pendingTimers).toBe(0)

    const expiring = Deadline.after(1_500, { clock })
    const late = gate.acquire({ provider: 'acme', keys: [KEY_A], deadline: expiring })
    await flush()
    clock.advance(1_500) // the deadline ends while the call is still waiting
    const error = await late.catch((e: unknown) => e)
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(clock.pendingTimers).toBe(0)
  })

  it('estimates the time a call needs from recent successful latencies (90th percentile)', async () => {
    const gate = admission({ defaultNeededMs: 777 })
    expect(gate.neededMs('acme')).toBe(777)
    for (let ms = 10; ms <= 100; ms += 10) {
      await gate.report('acme', KEY_A, { ok: true, latencyMs: ms })
    }
    expect(gate.neededMs('acme')).toBe(90)
    expect(gate.neededMs('other')).toBe(777)
  })

  it('keeps providers apart and names keys only by a short non-reversible id', async () => {
    const gate = admission()
    await gate.report('acme', KEY_A, limited(1000))
    const deadline = Deadline.after(100, { clock })
    const other = await gate.acquire({ provider: 'globex', keys: [KEY_A], deadline })
    expect(other.waitedMs).toBe(0)
    await expect(gate.acquire({ provider: 'acme', keys: [KEY_A], deadline })).rejects.toThrow()
    const text = JSON.stringify(events)
    expect(text).not.toContain(KEY_A)
    expect(text).toContain(keyId(KEY_A))
    expect(keyId(KEY_A)).toMatch(/^k[0-9a-f]{12}$/)
    expect(keyId(KEY_A)).not.toBe(keyId(KEY_B))
    deadline.dispose()
  })
})

describe('waitedMs', () => {
  it('is 0 when nothing held the request back, however long the store took to answer; the time held back when something did', async () => {
    // A store whose read takes 30 ms (a slow Redis round trip), on the manual clock.
    const slowStore = {
      async remaining(_provider: string, keyIds: readonly string[]) {
        clock.advance(30)
        return keyIds.map(() => 0)
      },
      async extend() {
        return { remainingMs: 0, extended: false }
      },
    }
    const gate = admission({ store: slowStore })
    const free = await gate.acquire({ provider: 'acme', keys: [KEY_A] })
    free.release()
    // A record said "waited 30 ms for the provider's limits" for a store's round trip.
    expect(free.waitedMs).toBe(0)

    // Held back by a cooldown: the time it waited is reported.
    const memory = admission()
    await memory.report('acme', KEY_A, limited(200))
    const pending = memory.acquire({ provider: 'acme', keys: [KEY_A] })
    await flush()
    clock.advance(200)
    const held = await pending
    held.release()
    expect(held.waitedMs).toBe(200)
  })

  it('one endpoint spelt two ways (host case, the default port, a trailing slash) shares one cooldown', async () => {
    const gate = admission()
    await gate.report('openai', KEY_A, limited(1000), {
      endpoint: 'https://API.OpenAI.com:443/v1/',
      model: 'm1',
    })
    const deadline = Deadline.after(500, { clock })
    // Before: a cooldown of its own (none), so the request went out into the same 429.
    await expect(
      gate.acquire({
        provider: 'openai',
        endpoint: 'https://api.openai.com/v1',
        keys: [KEY_A],
        deadline,
        model: 'm1',
      }),
    ).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 1000 })
    // Another endpoint (the path is case-sensitive) is not held back.
    const other = await gate.acquire({
      provider: 'openai',
      endpoint: 'https://api.openai.com/V1',
      keys: [KEY_A],
      deadline,
      model: 'm1',
    })
    other.release()
    deadline.dispose()
  })

  it('a refusal by the RPM/TPM limits dates its retryAtMs on the admission’s wall clock, as a cooldown’s', async () => {
    const gate = admission({ limits: new ProviderLimits({ limits: { acme: { rpm: 1 } } }) })
    const deadline = Deadline.after(500, { clock })
    const permit = await gate.acquire({ provider: 'acme', keys: [KEY_A], deadline, model: 'm1' })
    permit.release()
    const error = (await gate
      .acquire({ provider: 'acme', keys: [KEY_A], deadline, model: 'm1' })
      .catch((e: unknown) => e)) as RateLimitedError
    expect(isRateLimited(error)).toBe(true)
    expect(error.limit).toBe('rpm')
    // Before: Date.now() + retryAfterMs, another clock than the cooldowns' retryAtMs.
    expect(error.retryAtMs).toBe(1_700_000_000_000 + clock.now() + error.retryAfterMs)
    deadline.dispose()
  })

  it('a 429 or an auth failure reported while a request’s RPM/TPM count is in flight (a Redis round trip) holds that request back: no permit for a key known to be cooling or rejected', async () => {
    /** Limits whose every count is held until the test lets it answer, as a slow Redis holds it. */
    class HeldLimits extends ProviderLimits {
      readonly counting: Array<() => void> = []
      #onCount: (() => void) | undefined
      override get remote(): boolean {
        return true
      }
      nextCount(): Promise<void> {
        return new Promise((resolve) => (this.#onCount = resolve))
      }
      override async count(...args: Parameters<ProviderLimits['count']>) {
        await new Promise<void>((resolve) => {
          this.counting.push(resolve)
          this.#onCount?.()
        })
        return super.count(...args)
      }
    }
    // One request a minute: the count a held-back request took is given
    // back, or the request could not go once the cooldown is over.
    const limits = new HeldLimits({ limits: { acme: { rpm: 1 } } })
    const gate = admission({ limits })
    const deadline = Deadline.after(60_000, { clock })
    const target = { provider: 'acme', keys: [KEY_A], model: 'm1', deadline }

    // A 429 for this model on this key while the count is in flight.
    let counted = limits.nextCount()
    let settled: AdmissionPermit | unknown
    let pending = gate.acquire(target).then(
      (permit) => (settled = permit),
      (error: unknown) => (settled = error),
    )
    await counted
    await gate.report('acme', KEY_A, limited(5_000), { model: 'm1' })
    limits.counting.shift()?.()
    await flush()
    await flush()
    expect(settled, 'no permit while the key is cooling').toBeUndefined()
    // It waits out the cooldown, then is the probe.
    counted = limits.nextCount()
    clock.advance(5_000)
    await counted
    limits.counting.shift()?.()
    await pending
    expect((settled as AdmissionPermit).probe).toBe(true)
    ;(settled as AdmissionPermit).release()

    // A key rejected (401) while the count is in flight: refused, never granted with that key.
    const other = new HeldLimits({ limits: { acme: { rpm: 1 } } })
    counted = other.nextCount()
    settled = undefined
    const gate2 = admission({ limits: other })
    pending = gate2.acquire(target).then(
      (permit) => (settled = permit),
      (error: unknown) => (settled = error),
    )
    await counted
    await gate2.report('acme', KEY_A, { ok: false, error: { kind: 'auth', status: 401 } })
    other.counting.shift()?.()
    await pending
    expect(isKeysRetired(settled), 'refused: every key retired').toBe(true)
    deadline.dispose()
  })

  it('a call that ends while its RPM/TPM count is in flight gives the count back: a request never sent holds no share of the limit', async () => {
    class HeldLimits extends ProviderLimits {
      readonly counting: Array<() => void> = []
      override get remote(): boolean {
        return true
      }
      override async count(...args: Parameters<ProviderLimits['count']>) {
        await new Promise<void>((resolve) => this.counting.push(resolve))
        return super.count(...args)
      }
    }
    const limits = new HeldLimits({ limits: { acme: { rpm: 1, tpm: 100 } } })
    const gate = admission({ limits })
    // The minute's window does not fit it: a spent limit is refused at once, not waited for.
    const deadline = Deadline.after(1_000, { clock })
    const target = { provider: 'acme', keys: [KEY_A], model: 'm1', tokens: 60, deadline }
    const left = new AbortController()
    const gone = gate.acquire({ ...target, signal: left.signal }).catch((error: unknown) => error)
    await flush()
    expect(limits.counting).toHaveLength(1)
    left.abort(new Error('the client left'))
    expect(((await gone) as Error).message).toBe('the client left')
    // Its count is answered after the call has gone.
    limits.counting.shift()?.()
    await flush()
    await flush()
    const next = gate.acquire(target)
    await flush()
    limits.counting.shift()?.()
    const permit = await next.catch((error: unknown) => error)
    expect(permit, 'the next request gets the share the gone one took').toMatchObject({
      key: KEY_A,
    })
    deadline.dispose()
  })
})

describe('defaultCooldownMs', () => {
  it('backs off by strikes with up to 30 % jitter, and waits 5–10 s on overload (503, 529)', () => {
    const none = () => 0
    const full = () => 0.999
    expect(defaultCooldownMs({ kind: 'rate_limited', status: 429, strikes: 1 }, none)).toBe(1000)
    expect(defaultCooldownMs({ kind: 'rate_limited', status: 429, strikes: 3 }, none)).toBe(4000)
    expect(defaultCooldownMs({ kind: 'rate_limited', status: 429, strikes: 9 }, none)).toBe(20_000)
    expect(defaultCooldownMs({ kind: 'rate_limited', status: 429, strikes: 1 }, full)).toBe(1300)
    expect(defaultCooldownMs({ kind: 'server_error', status: 503, strikes: 1 }, none)).toBe(5000)
    expect(defaultCooldownMs({ kind: 'overloaded', status: 529, strikes: 4 }, full)).toBe(9995)
  })
})
