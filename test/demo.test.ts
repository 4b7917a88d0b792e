import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DemoFigures } from '@hourglass/cli'
import { describe, expect, it } from 'vitest'
import { assertBuilt, cliBin, repoRoot, runNode } from './cli/runNode.js'

// What `npm start` runs after its build (asserted below), on the built code.
const DEMO = [cliBin, 'demo']
// A loaded, shared 2-core machine delays timers and socket reads; figures are
// judged with this much slack, far below what the naive chain shows.
const SLACK_MS = 200

describe('npm start (hourglass demo)', () => {
  it('is what npm start runs, after building', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'))
    expect(pkg.scripts.start).toMatch(
      /^npm run build\b.*&& node packages\/cli\/dist\/bin\.js demo$/,
    )
  })

  it('exits 0 within 30 s; the toolkit chain answers by the deadline and stops upstream work, the naive chain does not', async () => {
    assertBuilt(cliBin)
    const run = await runNode([...DEMO, '--json'])
    expect(run.signal, 'the demo was killed after 30 s').toBeNull()
    expect(run.code, run.stderr).toBe(0)
    expect(run.elapsedMs).toBeLessThan(30_000)
    // Progress is drawn on a terminal only: captured output is just the figures.
    expect(run.stderr).toBe('')
    const { toolkit, naive } = JSON.parse(run.stdout) as DemoFigures

    expect(toolkit.requests).toBe(30)
    expect(naive.requests).toBe(30)
    // Toolkit: every request got an answer, none later than its deadline (plus slack),
    // and the ones that could not be served were told so with a 504 by the deadline.
    expect(toolkit.gaveUp).toBe(0)
    expect(toolkit.latestAnswerVsDeadlineMs!).toBeLessThanOrEqual(SLACK_MS)
    expect(toolkit.timeouts504).toBeGreaterThan(0)
    expect(toolkit.timeout504VsDeadlineMs!.max).toBeLessThanOrEqual(SLACK_MS)
    // …and once a client had its answer, nothing upstream kept working for it.
    expect(toolkit.zombie.stillRunningAtEnd).toBe(0)
    expect(toolkit.zombie.maxMs).toBeLessThanOrEqual(SLACK_MS)

    // Naive: clients gave up with no answer while every hop kept working for them.
    expect(naive.gaveUp).toBeGreaterThan(0)
    expect(naive.timeouts504).toBe(0)
    expect(naive.zombie.requests).toBeGreaterThanOrEqual(naive.gaveUp)
    expect(naive.zombie.totalMs).toBeGreaterThan(10 * Math.max(toolkit.zombie.totalMs, SLACK_MS))
    // Work nobody waited for was still paid for.
    expect(naive.paidGenerations).toBeGreaterThan(naive.onTime)
    expect(naive.paidPerDelivered!).toBeGreaterThan(toolkit.paidPerDelivered!)
  }, 40_000)

  it('prints a side-by-side report and one request’s slices, within 80 columns', async () => {
    assertBuilt(cliBin)
    const run = await runNode(DEMO)
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.trimEnd().split('\n')
    for (const line of lines) expect([...line].length, line).toBeLessThanOrEqual(80)
    const row = (label: string) => lines.find((l) => l.startsWith(label))
    expect(row('answered on time')).toMatch(/\d+\/30\s+\d+\/30$/)
    expect(row('no answer: the client gave up')).toMatch(/\s0\s+[1-9]\d*$/)
    expect(row('paid generations per delivered answer')).toMatch(/\d\.\d\d\s+(\d\.\d\d|—)$/)
    const slices = lines.filter((l) =>
      /^ {2}(dns|preprocess|model|write)\s+\d+ ms\s+\d+ ms/.test(l),
    )
    expect(slices.map((l) => l.trim().split(/\s+/)[0])).toEqual([
      'dns',
      'preprocess',
      'model',
      'write',
    ])
  }, 40_000)
})
