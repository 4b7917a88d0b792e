import { Deadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { CooldownScope } from '../../src/types.js'
import { drive, pause, startLimitedProviderOn, WaitClock } from '../support/waitClock.js'
import type { LimitedProvider } from './support/limitedProvider.js'

const KEY = 'sk-test-key-AAAAAAAAAAAAAAAAAAAA'
const MODEL = 'gpt-4o-mini'
const STAGGER_MS = 100
const FOLLOWERS = 8

const servers: LimitedProvider[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

/**
 * One call as the policy makes it (support/callModel.ts), for one model, its
 * limit reported with the scope the provider gave it: a permit, one request,
 * its outcome reported, and round again after a 429.
 */
async function callOnce(
  admission: Admission,
  url: string,
  deadline: Deadline,
  scope: CooldownScope,
): Promise<void> {
  for (;;) {
    const permit = await admission.acquire({
      provider: 'acme',
      keys: [KEY],
      model: MODEL,
      deadline,
    })
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${permit.key}`, 'content-type': 'application/json' },
      body: '{}',
      signal: deadline.signal,
    })
    await res.text()
    if (res.status === 200) {
      await permit.report({ ok: true })
      return
    }
    await permit.report({
      ok: false,
      error: {
        kind: 'rate_limited',
        status: res.status,
        retryAfterMs: Number(res.headers.get('retry-after')) * 1000,
        scope,
      },
    })
  }
}

/**
 * The first call meets a 429 (`retry-after: 1`) whose cooldown holds back
 * `scope`; FOLLOWERS more arrive during the cooldown and wait. Every time is
 * on a manual clock (`drive`): the provider's records are the waits
 * admission took. Returns when each request after the 429 was sent, in ms
 * after the probe's answer.
 */
async function afterCooldown(scope: CooldownScope) {
  const clock = new WaitClock()
  const provider = await startLimitedProviderOn(clock, {
    windowMs: 500,
    retryAfterS: 1,
    latencyMs: 5,
  })
  servers.push(provider)
  const admission = new Admission({ clock, staggerMs: STAGGER_MS, defaultNeededMs: 50 })
  const started = clock.now()
  const settled = await drive(
    clock,
    Array.from({ length: FOLLOWERS + 1 }, async (_, i) => {
      await pause(clock, 10 * i) // the first call meets the 429; the others arrive while it cools
      using deadline = Deadline.after(5000, { clock })
      await callOnce(admission, provider.url, deadline, scope)
    }),
  )
  for (const r of settled) if (r.status === 'rejected') throw r.reason
  const [limited, probe, ...followers] = provider.requests
  expect(limited?.status).toBe(429)
  expect(probe?.status).toBe(200)
  expect(followers.every((r) => r.status === 200)).toBe(true)
  const probeAt = (probe?.at as number) - started
  const answeredAt = probeAt + 5 // its latency
  const followerMs = followers.map((r) => r.at - started - answeredAt)
  console.info(
    `${scope}-scoped 429: probe sent at ${probeAt} ms; followers sent +[${followerMs.join(', ')}] ms after its answer`,
  )
  return { probeAt, followerMs }
}

describe('followers of a probe after a cooldown, whatever slot it cooled', () => {
  for (const scope of ['key', 'model', 'provider'] as const) {
    it(`a ${scope}-scoped 429: one probe when the cooldown ends, then the followers in line order, spread over staggerMs`, async () => {
      const { probeAt, followerMs } = await afterCooldown(scope)
      expect(probeAt).toBe(1000) // the cooldown was kept: nothing before its end, then one probe
      expect(followerMs).toHaveLength(FOLLOWERS)
      // The n-th of N goes n/N × staggerMs after the answer (a ManualClock fires
      // a wait at its very end: 12.5 ms, not 13); rounded to a µs for float steps.
      const toMicros = (ms: number) => Math.round(ms * 1000) / 1000
      expect(followerMs.map(toMicros)).toEqual(
        Array.from({ length: FOLLOWERS }, (_, n) => toMicros((n * STAGGER_MS) / FOLLOWERS)),
      )
    })
  }
})
