import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// fetch's probe reports `bodyGap`, each call's longest silence in the body
// (what bodyTimeoutMs limits, and what the suggested bodyTimeoutMs is sized
// from), but `hourglass probe` printed only `body` (headers → last byte):
// for a streamed body the figure behind the suggestion was nowhere to be
// seen. main() runs in this process, as test/cli's do. The endpoint streams
// three chunks 10 ms apart: the body is the sum of its silences, the gap
// the longest one, so the gap is below the body whatever the machine's load.

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const streamed = { type: 'stream', chunks: 3, intervalMs: 10 } as const

it('--json reports bodyGap per sample and as a phase, below the body it is part of', async () => {
  server = await faultServer(streamed)
  const run = await runMain(['probe', server.url, '--warmup', '0', '--samples', '2', '--json'])
  expect(run.code, run.stderr).toBe(0)
  const report = JSON.parse(run.stdout)
  expect(Object.keys(report.phases)).toEqual(['dns', 'connect', 'headers', 'body', 'bodyGap'])
  expect(report.phases.bodyGap).toEqual({
    medianMs: expect.any(Number),
    p90Ms: expect.any(Number),
    maxMs: expect.any(Number),
  })
  expect(report.phases.bodyGap.maxMs).toBeLessThan(report.phases.body.maxMs)
  expect(report.samples).toHaveLength(2)
  for (const s of report.samples) {
    expect(Object.keys(s)).toEqual([
      'status',
      'dnsMs',
      'connectMs',
      'headersMs',
      'bodyMs',
      'bodyGapMs',
      'totalMs',
    ])
    expect(s.bodyGapMs).toBeGreaterThan(0)
    expect(s.bodyGapMs).toBeLessThan(s.bodyMs)
  }
})

it('the report prints a bodyGap row after the body row', async () => {
  server = await faultServer(streamed)
  const run = await runMain(['probe', server.url, '--warmup', '0', '--samples', '2'])
  expect(run.code, run.stderr).toBe(0)
  const rows = run.stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0])
    .filter((name) => ['headers', 'body', 'bodyGap', 'total'].includes(name!))
  expect(rows).toEqual(['headers', 'body', 'bodyGap', 'total'])
  const gap = run.stdout.split('\n').find((line) => line.trimStart().startsWith('bodyGap '))
  expect(gap, run.stdout).toMatch(
    /^ {2}bodyGap\s+\d+\.\d ms\s+\d+\.\d ms\s+\d+\.\d ms\s+(\d+\.\d×|—)$/,
  )
})
