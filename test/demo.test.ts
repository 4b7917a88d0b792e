import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DemoFigures } from '@hourglass/cli'
import { describe, expect, it } from 'vitest'
import { renderDemo } from '../packages/cli/src/demo/renderDemo.js'
import { assertBuilt, hourglassBin, type NodeRun, repoRoot, runCommand } from './cli/runNode.js'

// A loaded, shared 2-core machine delays timers and socket reads; figures are
// judged with this much slack, far below what the naive chain shows.
const SLACK_MS = 200

// The two runs below (the demo, the demo --serve) are mostly waiting (a demo
// spends ~0.9 s of CPU in its 7 s), so they run side by side: the file would
// otherwise be the longest in the serial timing project.
//
// `hourglass demo` prints renderDemo(figures) where `--json` prints the
// figures themselves (packages/cli/src/commands/demo.ts): one run of the demo
// serves both tests of its report. A second whole run beside it, only to print
// the other form, spent its CPU in the middle of this one's measured traffic.
let npmStart: Promise<NodeRun> | undefined
const demoRun = () =>
  (npmStart ??= runCommand('npm', ['start', '--silent', '--', '--json'], { killAfterMs: 60_000 }))

describe.concurrent('npm start (hourglass demo)', () => {
  it('is the demo, after a build whose output goes to stderr', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'))
    expect(pkg.scripts.start).toBe(
      'node scripts/build-to-stderr.js && node packages/cli/bin/hourglass.js demo',
    )
  })

  it('`npm start --silent -- --json` prints only JSON on stdout (pipeable to jq); the toolkit chain answers by the deadline and stops upstream work, the naive chain does not', async () => {
    assertBuilt()
    const run = await demoRun()
    expect(run.signal, 'npm start was killed after 60 s').toBeNull()
    expect(run.code, run.stderr).toBe(0)
    // The build's banner went to stderr; the demo draws progress on a terminal only.
    expect(run.stderr).not.toMatch(/sending the same traffic/)
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
    // Most of them: a request whose hops happened to finish just before its
    // client hung up (on a loaded machine, 9 of 10 in one run) gave up
    // without leaving work behind, so not all, whatever the chain does.
    expect(naive.zombie.requests).toBeGreaterThanOrEqual(Math.ceil(naive.gaveUp / 2))
    expect(naive.zombie.totalMs).toBeGreaterThan(10 * Math.max(toolkit.zombie.totalMs, SLACK_MS))
    // Work nobody waited for was still paid for.
    expect(naive.paidGenerations).toBeGreaterThan(naive.onTime)
    expect(naive.paidPerDelivered!).toBeGreaterThan(toolkit.paidPerDelivered!)
  }, 70_000)

  it('prints a side-by-side report, a legend for its rows and one request’s slices with theirs, within 80 columns', async () => {
    assertBuilt()
    const run = await demoRun()
    expect(run.code, run.stderr).toBe(0)
    const lines = renderDemo(JSON.parse(run.stdout) as DemoFigures)
      .trimEnd()
      .split('\n')
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

    // The legend sits under the table (before the slices) and explains every
    // row's terms once; the slices' legend sits under them.
    const legendAt = lines.indexOf(
      'How to read it (ms; negative = before the deadline, + = after it):',
    )
    const table = lines.slice(0, legendAt).join('\n')
    const slicesAt = lines.findIndex((l) => l.startsWith('One ') && l.includes('slices:'))
    expect(legendAt).toBeGreaterThan(lines.indexOf(row('paid generations per delivered answer')!))
    expect(slicesAt).toBeGreaterThan(legendAt)
    const legend = lines.slice(legendAt, slicesAt).join('\n')
    const explained = (term: string) => new RegExp(`^ {2,4}.*\\b${term}\\b.*:`, 'm')
    for (const term of [
      'on time',
      'late',
      '504',
      'arrived vs deadline',
      'latest answer',
      'gave up',
      'work still running',
      'total / longest',
      'provider calls',
      'paid generations',
      'per delivered answer',
    ]) {
      expect(table, `"${term}" is a row of the table`).toContain(term)
      expect(legend, `the legend explains "${term}"`).toMatch(explained(term))
    }
    const sliceLegend = lines.slice(slicesAt + 2 + slices.length).join('\n')
    for (const term of ['dns, preprocess, model, write', 'allotted', 'used', 'outcome']) {
      expect(sliceLegend, `the slices' legend explains "${term}"`).toMatch(explained(term))
    }
    for (const outcome of ['ok', 'exceeded', 'cancelled', 'failed', 'not-started']) {
      expect(sliceLegend).toContain(outcome)
    }
  }, 70_000)
})

describe.concurrent('npm start -- --serve (hourglass demo --serve)', () => {
  it('the printed 300 ms curl gets 504s that name the slice that ran out and the budget the caller sent, 20 times in a row', async () => {
    assertBuilt()
    const child = spawn(process.execPath, [hourglassBin, 'demo', '--serve'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const exited = once(child, 'exit')
    try {
      const printed = await new Promise<string>((resolve, reject) => {
        let out = ''
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          out += chunk
          if (out.includes('Ctrl-C to stop.')) resolve(out)
        })
        child.once('exit', (code) => reject(new Error(`exited ${code} before serving: ${stderr}`)))
      })
      // The first curl printed: the toolkit chain with a tight budget.
      const curl = /curl -si (\S+) -H '([^']+)' \\\n\s+-H '([^']+)' -d '([^']+)'/.exec(printed)
      expect(curl, printed).not.toBeNull()
      const [, url, contentType, budget, body] = curl as unknown as [
        string,
        string,
        string,
        string,
        string,
      ]
      expect(budget).toBe('x-deadline-remaining-ms: 300')
      const header = (line: string) => line.split(': ') as [string, string]
      const statuses: number[] = []
      for (let i = 0; i < 20; i++) {
        const res = await fetch(url, {
          method: 'POST',
          headers: [header(contentType), header(budget)],
          body,
        })
        const answer = (await res.json()) as { elapsedMs: number }
        statuses.push(res.status)
        if (res.status !== 504) {
          expect(res.status, JSON.stringify(answer)).toBe(200)
          continue
        }
        expect(res.headers.get('x-deadline-expired')).toBe('1')
        expect(answer).toEqual({
          error: 'deadline_exceeded',
          budgetMs: 300,
          elapsedMs: expect.any(Number),
          slice: expect.stringMatching(/^(dns|preprocess|model|write|api)$/),
        })
        // On time, give or take a loaded machine (the first request also meets cold code).
        expect(answer.elapsedMs).toBeLessThanOrEqual(300 + SLACK_MS)
      }
      // What the printed text promises for this budget: mostly 504s.
      expect(statuses.filter((s) => s === 504).length, String(statuses)).toBeGreaterThan(10)
    } finally {
      child.kill('SIGTERM')
      const [code] = await exited
      expect(code, stderr).toBe(0)
    }
  }, 60_000)
})
