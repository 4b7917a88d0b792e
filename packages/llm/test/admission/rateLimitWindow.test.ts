import { Deadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { drive, driveOne, pause, startLimitedProviderOn, WaitClock } from '../support/waitClock.js'
import { callModel } from './support/callModel.js'
import type { LimitedProvider } from './support/limitedProvider.js'

const KEY_A = 'sk-test-key-AAAAAAAAAAAAAAAAAAAA'
const KEY_B = 'sk-test-key-BBBBBBBBBBBBBBBBBBBB'

const servers: LimitedProvider[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

interface CallResult {
  arrivedAt: number
  deadlineMs: number
  elapsedMs: number
  outcome: 'answered' | 'fell-back' | 'failed'
  error?: unknown
  fallbackDecidedMs?: number
}

// Every time here is on a manual clock — the provider's window and answer time, the arrivals, the
// deadlines, admission's cooldowns and staggers — moved only when every call waits on it (`drive`):
// what is measured is the waits admission took, not how late a busy machine ran them.
describe('admission against a provider that rate-limits for a window', () => {
  it('sends at most 1.3 requests per call; long deadlines all answer, short ones fail fast or fall back', async () => {
    // 500 ms of 429s with `retry-after: 1`; 60 calls arrive every 20 ms over 1.2 s.
    const clock = new WaitClock()
    const primary = await startLimitedProviderOn(clock, {
      windowMs: 500,
      retryAfterS: 1,
      latencyMs: 5,
    })
    const backup = await startLimitedProviderOn(clock, {
      windowMs: 0,
      retryAfterS: 1,
      latencyMs: 5,
    })
    servers.push(primary, backup)
    const admission = new Admission({ clock, defaultNeededMs: 200, staggerMs: 50 })
    const started = clock.now()
    const settled = await drive(
      clock,
      Array.from({ length: 60 }, async (_, i) => {
        await pause(clock, 20 * i) // arrival spacing
        // Every fourth call has 300 ms: it ends inside the cooldown. Half of those have a backup model.
        const deadlineMs = i % 4 === 3 ? 300 : 3000
        const hasFallback = i % 8 === 3
        return runCall(clock, admission, primary.url, backup.url, deadlineMs, hasFallback, started)
      }),
    )
    const results = settled.map((r) => {
      if (r.status === 'rejected') throw r.reason
      return r.value
    })

    // Every request sent anywhere counts, the backup model's included.
    const upstreamPerCall = (primary.requests.length + backup.requests.length) / results.length
    const long = results.filter((r) => r.deadlineMs === 3000)
    const short = results.filter((r) => r.deadlineMs === 300)
    const latencies = long.map((r) => r.elapsedMs).sort((a, b) => a - b)
    console.info(
      `admission window test: ${primary.requests.length + backup.requests.length} upstream requests for ${results.length} calls ` +
        `(${upstreamPerCall.toFixed(2)} per call, ${primary.requests.filter((r) => r.status === 429).length} × 429); ` +
        `long calls p50 ${latencies[Math.floor(latencies.length / 2)]?.toFixed(0)} ms, ` +
        `p99 ${latencies[Math.ceil(latencies.length * 0.99) - 1]?.toFixed(0)} ms; ` +
        `short calls: ${short.filter((r) => r.outcome === 'answered').length} answered, ` +
        `${short.filter((r) => r.outcome === 'fell-back').length} fell back, ${short.filter((r) => r.outcome === 'failed').length} failed, ` +
        `slowest refusal ${Math.max(...short.map((r) => r.fallbackDecidedMs ?? 0)).toFixed(0)} ms`,
    )

    expect(upstreamPerCall).toBeLessThanOrEqual(1.3)
    expect(long.every((r) => r.outcome === 'answered')).toBe(true)
    // The short calls that arrived while the provider was cooling did not wait to find out.
    const refused = short.filter((r) => r.outcome !== 'answered')
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) {
      expect(isRateLimited(r.error)).toBe(true)
      expect(r.fallbackDecidedMs).toBeLessThan(150) // well before the 300 ms deadline
    }
    for (const r of short.filter((r) => r.outcome === 'fell-back')) {
      expect(r.elapsedMs).toBeLessThan(300)
    }
    expect(backup.requests.length).toBe(short.filter((r) => r.outcome === 'fell-back').length)
  })

  it('never takes a wait longer than the deadline leaves, and prefers a second key to waiting', async () => {
    const clock = new WaitClock()
    const provider = await startLimitedProviderOn(clock, {
      windowMs: 2000,
      retryAfterS: 2,
      limitedKeys: [KEY_A],
    })
    servers.push(provider)
    const admission = new Admission({ clock, defaultNeededMs: 100 })

    // The first call learns that key A is limited, then goes on with key B at once.
    using first = Deadline.after(1000, { clock })
    const t0 = clock.now()
    const answered = await driveOne(
      clock,
      callModel(admission, {
        provider: 'acme',
        url: provider.url,
        keys: [KEY_A, KEY_B],
        deadline: first,
      }),
    )
    expect(answered.key).toBe(KEY_B)
    expect(clock.now() - t0).toBeLessThan(500)
    expect(provider.requests.map((r) => [r.key, r.status])).toEqual([
      [KEY_A, 429],
      [KEY_B, 200],
    ])

    // A call that has only key A and 1 s left does not wait the 2 s: it fails at once, sending nothing.
    using second = Deadline.after(1000, { clock })
    const t1 = clock.now()
    const error = await driveOne(
      clock,
      callModel(admission, {
        provider: 'acme',
        url: provider.url,
        keys: [KEY_A],
        deadline: second,
      }),
    ).catch((e: unknown) => e)
    const refusedAfterMs = clock.now() - t1
    expect(isRateLimited(error)).toBe(true)
    expect((error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(1000)
    expect(refusedAfterMs).toBeLessThan(100)
    expect(provider.requests).toHaveLength(2)
  })
})

async function runCall(
  clock: WaitClock,
  admission: Admission,
  url: string,
  backupUrl: string,
  deadlineMs: number,
  hasFallback: boolean,
  started: number,
): Promise<CallResult> {
  const arrivedAt = clock.now()
  using deadline = Deadline.after(deadlineMs, { clock })
  const base = { arrivedAt: arrivedAt - started, deadlineMs }
  try {
    await callModel(admission, { provider: 'primary', url, keys: [KEY_A], deadline, hasFallback })
    return { ...base, elapsedMs: clock.now() - arrivedAt, outcome: 'answered' }
  } catch (error) {
    const fallbackDecidedMs = clock.now() - arrivedAt
    if (!hasFallback || !isRateLimited(error)) {
      return { ...base, elapsedMs: fallbackDecidedMs, outcome: 'failed', error, fallbackDecidedMs }
    }
    await callModel(admission, { provider: 'backup', url: backupUrl, keys: [KEY_B], deadline })
    return {
      ...base,
      elapsedMs: clock.now() - arrivedAt,
      outcome: 'fell-back',
      error,
      fallbackDecidedMs,
    }
  }
}
