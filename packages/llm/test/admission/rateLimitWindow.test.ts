import { Deadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { callModel } from './support/callModel.js'
import { type LimitedProvider, startLimitedProvider } from './support/limitedProvider.js'

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

describe('admission against a provider that rate-limits for a window', () => {
  it('sends at most 1.3 requests per call; long deadlines all answer, short ones fail fast or fall back', async () => {
    // 500 ms of 429s with `retry-after: 1`; 60 calls arrive every 20 ms over 1.2 s.
    const primary = await startLimitedProvider({ windowMs: 500, retryAfterS: 1, latencyMs: 5 })
    const backup = await startLimitedProvider({ windowMs: 0, retryAfterS: 1, latencyMs: 5 })
    servers.push(primary, backup)
    const admission = new Admission({ defaultNeededMs: 200, staggerMs: 50 })
    const started = performance.now()
    const calls: Array<Promise<CallResult>> = []
    for (let i = 0; i < 60; i++) {
      // Every fourth call has 300 ms: it ends inside the cooldown. Half of those have a backup model.
      const deadlineMs = i % 4 === 3 ? 300 : 3000
      const hasFallback = i % 8 === 3
      calls.push(runCall(admission, primary.url, backup.url, deadlineMs, hasFallback, started))
      await new Promise<void>((resolve) => setTimeout(resolve, 20)) // arrival spacing, not synchronisation
    }
    const results = await Promise.all(calls)

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
    const provider = await startLimitedProvider({
      windowMs: 2000,
      retryAfterS: 2,
      limitedKeys: [KEY_A],
    })
    servers.push(provider)
    const admission = new Admission({ defaultNeededMs: 100 })

    // The first call learns that key A is limited, then goes on with key B at once.
    using first = Deadline.after(1000)
    const t0 = performance.now()
    const answered = await callModel(admission, {
      provider: 'acme',
      url: provider.url,
      keys: [KEY_A, KEY_B],
      deadline: first,
    })
    expect(answered.key).toBe(KEY_B)
    expect(performance.now() - t0).toBeLessThan(500)
    expect(provider.requests.map((r) => [r.key, r.status])).toEqual([
      [KEY_A, 429],
      [KEY_B, 200],
    ])

    // A call that has only key A and 1 s left does not wait the 2 s: it fails at once, sending nothing.
    using second = Deadline.after(1000)
    const t1 = performance.now()
    const error = await callModel(admission, {
      provider: 'acme',
      url: provider.url,
      keys: [KEY_A],
      deadline: second,
    }).catch((e: unknown) => e)
    const refusedAfterMs = performance.now() - t1
    expect(isRateLimited(error)).toBe(true)
    expect((error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(1000)
    expect(refusedAfterMs).toBeLessThan(100)
    expect(provider.requests).toHaveLength(2)
  })
})

async function runCall(
  admission: Admission,
  url: string,
  backupUrl: string,
  deadlineMs: number,
  hasFallback: boolean,
  started: number,
): Promise<CallResult> {
  const arrivedAt = performance.now()
  using deadline = Deadline.after(deadlineMs)
  const base = { arrivedAt: arrivedAt - started, deadlineMs }
  try {
    await callModel(admission, { provider: 'primary', url, keys: [KEY_A], deadline, hasFallback })
    return { ...base, elapsedMs: performance.now() - arrivedAt, outcome: 'answered' }
  } catch (error) {
    const fallbackDecidedMs = performance.now() - arrivedAt
    if (!hasFallback || !isRateLimited(error)) {
      return { ...base, elapsedMs: fallbackDecidedMs, outcome: 'failed', error, fallbackDecidedMs }
    }
    await callModel(admission, { provider: 'backup', url: backupUrl, keys: [KEY_B], deadline })
    return {
      ...base,
      elapsedMs: performance.now() - arrivedAt,
      outcome: 'fell-back',
      error,
      fallbackDecidedMs,
    }
  }
}
