import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { runMain } from './runMain.js'

let close: (() => Promise<void>) | undefined
afterEach(async () => {
  await close?.()
  close = undefined
})

/** The JSON block the probe ends with: the settings to paste. */
function suggested(stdout: string): Record<string, unknown> {
  const start = stdout.lastIndexOf('\n{')
  expect(start, stdout).toBeGreaterThan(0)
  return JSON.parse(stdout.slice(start))
}

/** A phase row of the table: median, p90 and max in ms. */
function phaseRow(stdout: string, phase: string): number[] {
  const line = stdout.split('\n').find((l) => l.trimStart().startsWith(`${phase} `))
  expect(line, stdout).toMatch(/\d+\.\d ms\s+\d+\.\d ms\s+\d+\.\d ms\s+(\d+\.\d×|—)$/)
  return [...line!.matchAll(/(\d+\.\d) ms/g)].map((m) => Number(m[1]))
}

describe('hourglass probe <url>', () => {
  it('warms up, samples, and prints per-phase median / p90 / max / ratio, a histogram, a warning for a long tail, and settings to paste', async () => {
    // Call 0 is the warm-up; of the 10 measured, 8 answer in ~5 ms and 2 in ~150 ms:
    // nearest-rank p90 lands on the tail, so p90 ≥ 3 × median.
    const server = await faultServer((_req, i) => ({
      type: 'respond',
      body: 'ok',
      delayMs: i >= 9 ? 150 : 5,
    }))
    close = server.close
    const run = await runMain([
      'probe',
      `${server.url}/health`,
      '--warmup',
      '1',
      '--samples',
      '10',
      '--budget',
      '1000',
    ])
    expect(run.code, run.stderr).toBe(0)
    expect(server.records).toHaveLength(11)
    // Progress on a non-terminal: one dot per call.
    expect(run.stderr).toMatch(/^probing .*\/health \(1 warm-up, 10 measured\) \.{11}\n$/)

    const lines = run.stdout.split('\n')
    expect(lines[0]).toBe(`10 samples of ${server.url}/health`)
    for (const phase of ['connect', 'headers', 'body', 'total']) phaseRow(run.stdout, phase)
    const [median, p90, max] = phaseRow(run.stdout, 'total')
    expect(median!).toBeLessThan(100)
    expect(p90!).toBeGreaterThanOrEqual(150)
    expect(max!).toBeGreaterThanOrEqual(p90!)
    // The histogram's counts add up to the samples measured.
    const bars = lines.filter((l) => /^\s+\d[\d.]*–\d[\d.]* ms \|/.test(l))
    expect(bars.length).toBeGreaterThan(1)
    const counts = bars.map((l) => Number(l.match(/\| ?#* (\d+)$/)?.[1] ?? 0))
    expect(counts.reduce((a, b) => a + b, 0)).toBe(10)
    expect(run.stdout).toMatch(/^warning: p90 \(\d+(\.\d)? ms\) is \d+(\.\d)?× the median/m)

    const settings = suggested(run.stdout)
    // 127.0.0.1 is looked up by nobody: no DNS limit to paste.
    expect(Object.keys(settings)).toEqual([
      'connectTimeoutMs',
      'headersTimeoutMs',
      'bodyTimeoutMs',
      'slice',
    ])
    // Headers (time to first byte) cover the slowest sample: the tail is budgeted, not cut.
    expect(settings['headersTimeoutMs']).toBeGreaterThanOrEqual(150)
    expect(settings['headersTimeoutMs']).toBeLessThanOrEqual(1000)
    expect(settings['slice']).toMatchObject({ ms: expect.any(Number), share: expect.any(Number) })
  })

  it('an IP address gets no DNS row figures and no DNS limit', async () => {
    const server = await faultServer({ type: 'respond', body: 'ok', delayMs: 40 })
    close = server.close
    const run = await runMain(['probe', server.url, '--samples', '5'])
    expect(run.code, run.stderr).toBe(0)
    expect(server.records).toHaveLength(3 + 5)
    expect(run.stdout).toMatch(/^ {2}dns +none: an IP address needs no lookup$/m)
    expect(run.stdout).not.toContain('warning:')
    expect(run.stdout).toContain('suggested settings for a 2000 ms budget')
    expect(suggested(run.stdout)).not.toHaveProperty('dnsTimeoutMs')
  })

  it('suggests limits that cover the slowest sample when 3 of 30 are far slower than the p90', async () => {
    // Warm-up is call 0; measured calls 1–30: three of them take 250, 300 and 350 ms
    // (the rest ~5 ms: the p90 lands on a fast one, far below the three).
    const slow: Record<number, number> = { 8: 250, 17: 300, 26: 350 }
    const server = await faultServer((_req, i) => ({
      type: 'respond',
      body: 'ok',
      delayMs: slow[i] ?? 5,
    }))
    close = server.close
    const args = ['probe', server.url, '--warmup', '1', '--samples', '30']
    const run = await runMain([...args, '--budget', '2000'])
    expect(run.code, run.stderr).toBe(0)
    const [, headersP90, headersMax] = phaseRow(run.stdout, 'headers')
    expect(headersP90!).toBeLessThan(150) // p90 × 2 alone would cut the three
    expect(headersMax!).toBeGreaterThanOrEqual(350)
    const settings = suggested(run.stdout)
    expect(settings['headersTimeoutMs']).toBeGreaterThanOrEqual(headersMax!)
    expect((settings['slice'] as { ms: number }).ms).toBeGreaterThanOrEqual(headersMax!)
    expect(run.stdout).not.toMatch(/would have cut/)
  }, 30_000)

  it('says plainly which share of the samples a setting capped by the budget would cut', async () => {
    // Two of ten take 300 and 400 ms, over the 200 ms budget that caps the settings.
    const slow: Record<number, number> = { 3: 300, 6: 400 }
    const server = await faultServer((_req, i) => ({
      type: 'respond',
      body: 'ok',
      delayMs: slow[i] ?? 5,
    }))
    close = server.close
    const run = await runMain([
      'probe',
      server.url,
      '--warmup',
      '0',
      '--samples',
      '10',
      '--budget',
      '200',
    ])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(
      /^warning: headersTimeoutMs \(200 ms, capped by the 200 ms budget\) would have cut 2 of 10 samples \(20 %\), which took 3\d\d–4\d\d ms$/m,
    )
    expect(run.stdout).toMatch(/^warning: the slice \(200 ms, .*would have cut 2 of 10 samples/m)
    expect(suggested(run.stdout)['headersTimeoutMs']).toBe(200)
  })

  it('sends every --header on every call, warm-up included', async () => {
    const server = await faultServer({ type: 'respond', body: 'ok' })
    close = server.close
    const run = await runMain([
      'probe',
      server.url,
      '--warmup',
      '1',
      '--samples',
      '2',
      '--header',
      'Authorization: Bearer sk-probe-secret',
      '-H',
      'x-tenant:acme',
    ])
    expect(run.code, run.stderr).toBe(0)
    expect(server.records).toHaveLength(3)
    for (const r of server.records) {
      expect(r.headers['authorization']).toBe('Bearer sk-probe-secret')
      expect(r.headers['x-tenant']).toBe('acme')
    }
    expect(run.stdout + run.stderr).not.toContain('sk-probe-secret')
  })

  it('--json prints one JSON object on stdout: samples, stats, settings, cuts and warnings', async () => {
    const server = await faultServer({ type: 'respond', body: 'ok', delayMs: 10 })
    close = server.close
    const run = await runMain([
      'probe',
      `${server.url}/x`,
      '--warmup',
      '2',
      '--samples',
      '4',
      '--budget',
      '800',
      '--json',
    ])
    expect(run.code, run.stderr).toBe(0)
    const report = JSON.parse(run.stdout)
    expect(report).toMatchObject({
      url: `${server.url}/x`,
      budgetMs: 800,
      fits: true,
      cuts: [],
      warnings: expect.any(Array),
      phases: { dns: null },
    })
    expect(report.samples).toHaveLength(4)
    for (const s of report.samples) {
      expect(s).toMatchObject({ status: 200, dnsMs: null })
      expect(s.headersMs).toBeGreaterThanOrEqual(5)
    }
    expect(report.total.maxMs).toBeGreaterThanOrEqual(report.total.p90Ms)
    expect(Object.keys(report.settings)).toEqual([
      'connectTimeoutMs',
      'headersTimeoutMs',
      'bodyTimeoutMs',
      'slice',
    ])
  })

  it('prints a URL’s credentials nowhere (they are still sent)', async () => {
    const server = await faultServer({ type: 'respond', body: 'ok' })
    close = server.close
    const withCredentials = server.url.replace('http://', 'http://user:pa55word@')
    const run = await runMain(['probe', withCredentials, '--warmup', '0', '--samples', '1'])
    expect(run.code, run.stderr).toBe(0)
    expect(server.records[0]!.headers['authorization']).toBe(
      `Basic ${Buffer.from('user:pa55word').toString('base64')}`,
    )
    expect(run.stdout + run.stderr).not.toContain('pa55word')
  })

  it('fails with one line and exit 1 when the endpoint cannot be reached', async () => {
    const server = await faultServer({ type: 'reset' })
    close = server.close
    const run = await runMain(['probe', server.url, '--warmup', '0', '--samples', '2'])
    expect(run.code).toBe(1)
    const errorLines = run.stderr.split('\n').filter((l) => l.startsWith('hourglass'))
    expect(errorLines).toHaveLength(1)
    // Where and what, not undici's bare "other side closed".
    expect(errorLines[0]).toMatch(/^hourglass probe: 127\.0\.0\.1:\d+ closed the connection/)
    expect(run.stdout).toBe('')
  })

  it('names a name that does not resolve as a DNS failure, in one line, exit 1', async () => {
    // .invalid never resolves (RFC 2606): ENOTFOUND, or EAI_AGAIN without a resolver.
    const run = await runMain([
      'probe',
      'http://no-such-host.invalid/',
      '--warmup',
      '0',
      '--samples',
      '1',
    ])
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    const errorLines = run.stderr.split('\n').filter((l) => l.startsWith('hourglass'))
    expect(errorLines).toHaveLength(1)
    expect(errorLines[0]).toMatch(
      /^hourglass probe: DNS lookup of no-such-host\.invalid failed \((ENOTFOUND|EAI_AGAIN)/,
    )
    expect(run.stderr).not.toMatch(/connect/)
  })
})
