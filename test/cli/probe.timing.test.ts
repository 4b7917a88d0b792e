import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, runNode } from './runNode.js'

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

describe('hourglass probe <url>', () => {
  it('warms up, samples, and prints per-phase median / p90 / ratio, a histogram, a warning for a long tail, and settings to paste', async () => {
    assertBuilt()
    // Call 0 is the warm-up; of the 10 measured, 8 answer in ~5 ms and 2 in ~150 ms:
    // nearest-rank p90 lands on the tail, so p90 ≥ 3 × median.
    const server = await faultServer((_req, i) => ({
      type: 'respond',
      body: 'ok',
      delayMs: i >= 9 ? 150 : 5,
    }))
    close = server.close
    const run = await runNode([
      hourglassBin,
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
    for (const phase of ['dns', 'connect', 'headers', 'body', 'total']) {
      expect(lines.find((l) => l.trimStart().startsWith(`${phase} `))).toMatch(
        /\d+\.\d ms\s+\d+\.\d ms\s+(\d+\.\d×|—)$/,
      )
    }
    const total = lines.find((l) => l.trimStart().startsWith('total '))!
    const [median, p90] = [...total.matchAll(/(\d+\.\d) ms/g)].map((m) => Number(m[1]))
    expect(median!).toBeLessThan(100)
    expect(p90!).toBeGreaterThanOrEqual(150)
    // The histogram's counts add up to the samples measured.
    const bars = lines.filter((l) => /^\s+\d[\d.]*–\d[\d.]* ms \|/.test(l))
    expect(bars.length).toBeGreaterThan(1)
    const counts = bars.map((l) => Number(l.match(/\| ?#* (\d+)$/)?.[1] ?? 0))
    expect(counts.reduce((a, b) => a + b, 0)).toBe(10)
    expect(run.stdout).toMatch(/^warning: p90 \(\d+(\.\d)? ms\) is \d+(\.\d)?× the median/m)

    const settings = suggested(run.stdout)
    expect(Object.keys(settings)).toEqual([
      'dnsTimeoutMs',
      'connectTimeoutMs',
      'headersTimeoutMs',
      'bodyTimeoutMs',
      'slice',
    ])
    // Headers (time to first byte) get p90 × 2: the tail is budgeted, not cut.
    expect(settings['headersTimeoutMs']).toBeGreaterThanOrEqual(300)
    expect(settings['headersTimeoutMs']).toBeLessThanOrEqual(1000)
    expect(settings['slice']).toMatchObject({ ms: expect.any(Number), share: expect.any(Number) })
  })

  it('prints no warning for an endpoint without a long tail', async () => {
    assertBuilt()
    const server = await faultServer({ type: 'respond', body: 'ok', delayMs: 40 })
    close = server.close
    const run = await runNode([hourglassBin, 'probe', server.url, '--samples', '5'])
    expect(run.code, run.stderr).toBe(0)
    expect(server.records).toHaveLength(3 + 5)
    expect(run.stdout).not.toContain('warning:')
    expect(run.stdout).toContain('suggested settings for a 2000 ms budget')
  })

  it('fails with one line and exit 1 when the endpoint cannot be reached', async () => {
    assertBuilt()
    const server = await faultServer({ type: 'reset' })
    close = server.close
    const run = await runNode([
      hourglassBin,
      'probe',
      server.url,
      '--warmup',
      '0',
      '--samples',
      '2',
    ])
    expect(run.code).toBe(1)
    const errorLines = run.stderr.split('\n').filter((l) => l.startsWith('hourglass'))
    expect(errorLines).toHaveLength(1)
    expect(run.stdout).toBe('')
  })
})
