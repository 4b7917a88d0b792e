import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import {
  isProbeRedirect,
  type LookupFunction,
  type ProbeResult,
  type ProbeSample,
  probe,
  suggestTimeouts,
} from '../src/index.js'
import { probeResult } from './support/probeResult.js'

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

describe('probe', () => {
  it('warms up, measures the samples, and reports median, p90, max and per-phase timings', async () => {
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
    expect(result.maxMs).toBe(Math.max(...result.samples.map((s) => s.totalMs!)))
    expect(result.phases.headers.medianMs).toBeGreaterThanOrEqual(35)
    // Fresh connections by default: every sample did its own lookup and connect.
    for (const s of result.samples) {
      expect(s.dnsMs).toBeTypeOf('number')
      expect(s.connectMs).toBeTypeOf('number')
      expect(s.status).toBe(200)
    }
    expect(result.phases.dns?.samples).toBe(10)
    expect(result.phases.connect?.samples).toBe(10)
    expect(result.ratio).toBeLessThan(3)
    expect(result.warning).toBeUndefined()
  })

  it('warns when p90 ≥ 3 × median', async () => {
    // After 3 warm-up calls, 2 of the 10 measured calls take 150 ms, the others ~0.
    const server = await faultServer((_r, i) => ({
      type: 'respond',
      delayMs: i === 5 || i === 9 ? 150 : 0,
    }))
    closers.push(server)
    const result = await probe(server.url, { warmup: 3, samples: 10 })
    expect(result.p90Ms).toBeGreaterThanOrEqual(140)
    expect(result.ratio).toBeGreaterThanOrEqual(3)
    expect(result.warning).toMatch(/lottery/)
  })

  it('an IP address has no DNS phase: no DNS stats, and no DNS limit suggested', async () => {
    const server = await faultServer({ type: 'respond', body: 'ok' })
    closers.push(server)
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:/)
    const result = await probe(server.url, { warmup: 0, samples: 3 })
    for (const s of result.samples) expect(s.dnsMs).toBeUndefined()
    expect(result.phases.dns).toBeUndefined()
    expect(result.phases.connect?.samples).toBe(3)
    const suggested = suggestTimeouts(result, 1000)
    expect(suggested.dnsTimeoutMs).toBeUndefined()
    expect(suggested.connectTimeoutMs).toBeTypeOf('number')
  })

  it('sends its headers on every call, warm-up included; a repeated name is sent with both values', async () => {
    const server = await faultServer({ type: 'respond', body: 'ok' })
    closers.push(server)
    await probe(server.url, {
      warmup: 1,
      samples: 2,
      headers: [
        ['authorization', 'Bearer t0ken'],
        ['x-tenant', 'a'],
        ['x-tenant', 'b'],
      ],
    })
    expect(server.records).toHaveLength(3)
    for (const r of server.records) {
      expect(r.headers['authorization']).toBe('Bearer t0ken')
      expect(r.headers['x-tenant']).toBe('a, b')
    }
  })

  it('measures every keep-alive call with freshConnections: false; connect stats cover only the calls that connected', async () => {
    const server = await faultServer({ type: 'respond', body: 'ok' })
    closers.push(server)
    const result = await probe(server.url, { warmup: 0, samples: 6, freshConnections: false })
    expect(result.samples).toHaveLength(6)
    expect(result.samples[0]!.connectMs).toBeTypeOf('number')
    // Every later call reuses that connection: the probe waits a turn for it
    // to be back in undici's pool (probeKeepAliveWarmup.test.ts).
    const connected = result.samples.filter((s) => s.connectMs !== undefined).length
    expect(connected).toBe(1)
    expect(result.phases.connect?.samples).toBe(connected)
  })

  it('a name that does not resolve fails in the dns phase, with the resolver’s code', async () => {
    const lookup: LookupFunction = (hostname, _o, cb) =>
      cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '')
    const error = await probe('http://no-such-host.test/', {
      warmup: 0,
      samples: 1,
      lookup,
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ phase: 'dns', osCode: 'ENOTFOUND' })
  })

  it('refuses a URL that redirects instead of timing its last hop as the call', async () => {
    const seen: string[] = []
    // The first hop is the slow one: timing only the last hop would miss it all.
    const server = createServer((req, res) => {
      seen.push(req.url ?? '')
      if (req.url === '/from') setTimeout(() => res.writeHead(302, { location: '/to' }).end(), 50)
      else res.end('ok')
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    closers.push({
      close: async () => {
        server.closeAllConnections()
        server.close()
        await once(server, 'close')
      },
    })
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/from`
    const error = await probe(url, { warmup: 0, samples: 3 }).catch((e: unknown) => e)
    expect(isProbeRedirect(error)).toBe(true)
    expect(error).toMatchObject({
      code: 'PROBE_REDIRECTED',
      status: 302,
      location: url.replace('/from', '/to'),
    })
    expect((error as Error).message).toContain(`${url} answered 302, a redirect to`)
    // It stopped at the first call, before calling where it redirects.
    expect(seen).toEqual(['/from'])
  })

  it('refuses counts that are not whole numbers, with a message naming them', async () => {
    for (const warmup of [Number.NaN, -1, 1.5]) {
      await expect(probe('http://127.0.0.1:1/', { warmup })).rejects.toThrow(
        /warmup must be an integer/,
      )
    }
    for (const samples of [Number.NaN, 0, 2.5]) {
      await expect(probe('http://127.0.0.1:1/', { samples })).rejects.toThrow(
        /samples must be an integer/,
      )
    }
  })
})

describe('suggestTimeouts', () => {
  const result = probeResult

  it('gives each phase its p90 × 2 (at least 10 ms) and the call a slice of p90 × 2, when that covers the slowest sample', () => {
    expect(suggestTimeouts(result, 1000)).toEqual({
      dnsTimeoutMs: 10,
      connectTimeoutMs: 40,
      headersTimeoutMs: 240,
      bodyTimeoutMs: 50,
      sliceMs: 300,
      share: 0.3,
      fits: true,
      cuts: [],
      warnings: [],
    })
  })

  /** 27 calls answer headers in ~55–63 ms, 3 in 300, 400 and 500 ms: the case a p90 alone hides. */
  const tail = (): ProbeResult => {
    const samples: ProbeSample[] = Array.from({ length: 30 }, (_, i) => {
      const headersMs = i < 27 ? 55 + (i % 9) : [300, 400, 500][i - 27]!
      return { dnsMs: 1, connectMs: 2, headersMs, bodyMs: 1, totalMs: headersMs + 4, status: 200 }
    })
    const stat = (values: number[]) => {
      const sorted = [...values].sort((a, b) => a - b)
      return {
        medianMs: sorted[14]!,
        p90Ms: sorted[26]!,
        maxMs: sorted[29]!,
        samples: values.length,
      }
    }
    const total = stat(samples.map((s) => s.totalMs!))
    return {
      url: 'http://x',
      samples,
      medianMs: total.medianMs,
      p90Ms: total.p90Ms,
      maxMs: total.maxMs,
      ratio: total.p90Ms / total.medianMs,
      phases: {
        dns: stat(samples.map((s) => s.dnsMs!)),
        connect: stat(samples.map((s) => s.connectMs!)),
        headers: stat(samples.map((s) => s.headersMs!)),
        body: stat(samples.map((s) => s.bodyMs!)),
      },
      warning: undefined,
    }
  }

  it('covers the slowest sample even when the p90 does not see it (3 of 30 samples at 300–500 ms)', () => {
    const r = tail()
    expect(r.phases.headers.p90Ms * 2).toBeLessThan(130) // what p90 × 2 alone would suggest
    const s = suggestTimeouts(r, 2000)
    expect(s.headersTimeoutMs).toBeGreaterThanOrEqual(500)
    expect(s.sliceMs).toBeGreaterThanOrEqual(504)
    for (const sample of r.samples) {
      expect(sample.headersMs!).toBeLessThanOrEqual(s.headersTimeoutMs)
      expect(sample.totalMs!).toBeLessThanOrEqual(s.sliceMs)
    }
    expect(s.cuts).toEqual([])
    expect(s.warnings).toEqual([])
  })

  it('says plainly which share of the samples a setting capped by the budget would cut', () => {
    const s = suggestTimeouts(tail(), 350)
    expect(s.headersTimeoutMs).toBe(350)
    expect(s.sliceMs).toBe(350)
    expect(s.cuts).toEqual([
      {
        setting: 'headersTimeoutMs',
        limitMs: 350,
        samples: 2,
        of: 30,
        share: 2 / 30,
        fromMs: 400,
        toMs: 500,
      },
      {
        setting: 'sliceMs',
        limitMs: 350,
        samples: 2,
        of: 30,
        share: 2 / 30,
        fromMs: 404,
        toMs: 504,
      },
    ])
    expect(s.warnings).toEqual([
      'headersTimeoutMs (350 ms, capped by the 350 ms budget) would have cut 2 of 30 samples (6.7 %), which took 400–500 ms',
      'the slice (350 ms, capped by the 350 ms budget) would have cut 2 of 30 samples (6.7 %), which took 404–504 ms',
    ])
  })

  it('suggests no DNS limit when no sample looked a name up, and no connect limit when none connected', () => {
    const s = suggestTimeouts(
      { ...result, phases: { ...result.phases, dns: undefined, connect: undefined } },
      1000,
    )
    expect(s.dnsTimeoutMs).toBeUndefined()
    expect(s.connectTimeoutMs).toBeUndefined()
    expect(s.headersTimeoutMs).toBe(240)
  })

  it('says so when the p90 call does not fit in the budget', () => {
    const s = suggestTimeouts(result, 120)
    expect(s.fits).toBe(false)
    expect(s.sliceMs).toBe(120)
    expect(s.headersTimeoutMs).toBe(120)
    expect(s.warnings[0]).toMatch(/exceeds the 120 ms budget/)
  })
})
