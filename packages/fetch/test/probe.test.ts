import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type LookupFunction, probe, suggestTimeouts } from '../src/index.js'

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

describe('probe', () => {
  it('warms up, measures the samples, and reports median, p90 and per-phase timings', async () => {
    const server = await faultServer({ type: 'respond', delayMs: 40 })
    closers.push(server)
    const lookup: LookupFunction = (_h, _o, cb) => cb(null, '127.0.0.1', 4)
    const result = await probe(`http://svc.test:${server.port}/`, {
      warmup: 3,
      samples: 10,
      lookup,
    })
    expect(server.records).toHaveLength(13)
    expect(result.samples).toHaveLength(10)
    expect(result.medianMs).toBeGreaterThanOrEqual(35)
    expect(result.p90Ms).toBeGreaterThanOrEqual(result.medianMs)
    expect(result.phases.headers.medianMs).toBeGreaterThanOrEqual(35)
    // Fresh connections by default: every sample did its own lookup and connect.
    for (const s of result.samples) {
      expect(s.dnsMs).toBeTypeOf('number')
      expect(s.connectMs).toBeTypeOf('number')
      expect(s.status).toBe(200)
    }
    expect(result.ratio).toBeLessThan(3)
    expect(result.warning).toBeUndefined()
  })

  it('warns when p90 ≥ 3 × median', async () => {
    // After 3 warm-up calls, 2 of the 10 measured calls take 400 ms, the others ~0.
    const server = await faultServer((_r, i) => ({
      type: 'respond',
      delayMs: i === 5 || i === 9 ? 400 : 0,
    }))
    closers.push(server)
    const result = await probe(server.url, { warmup: 3, samples: 10 })
    expect(result.p90Ms).toBeGreaterThanOrEqual(390)
    expect(result.ratio).toBeGreaterThanOrEqual(3)
    expect(result.warning).toMatch(/lottery/)
  })
})

describe('suggestTimeouts', () => {
  const result = {
    url: 'http://x',
    samples: [],
    medianMs: 100,
    p90Ms: 150,
    ratio: 1.5,
    phases: {
      dns: { medianMs: 1, p90Ms: 2 },
      connect: { medianMs: 5, p90Ms: 20 },
      headers: { medianMs: 80, p90Ms: 120 },
      body: { medianMs: 10, p90Ms: 25 },
    },
    warning: undefined,
  }

  it('gives each phase its p90 × 2 (at least 10 ms) and the call a slice of p90 × 2', () => {
    expect(suggestTimeouts(result, 1000)).toEqual({
      dnsTimeoutMs: 10,
      connectTimeoutMs: 40,
      headersTimeoutMs: 240,
      bodyTimeoutMs: 50,
      sliceMs: 300,
      share: 0.3,
      fits: true,
      warning: undefined,
    })
  })

  it('says so when the p90 call does not fit in the budget', () => {
    const s = suggestTimeouts(result, 120)
    expect(s.fits).toBe(false)
    expect(s.sliceMs).toBe(120)
    expect(s.headersTimeoutMs).toBe(120)
    expect(s.warning).toMatch(/exceeds the 120 ms budget/)
  })
})
