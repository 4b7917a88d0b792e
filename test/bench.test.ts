import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const PACKAGES = ['core', 'express', 'fetch', 'testkit', 'llm', 'gateway', 'bullmq']
// Every benchmark, by the heading number the report gives it.
// The smoke run inside `npm test` leaves out the sections whose quick runs are
// mostly fixed waits — server warm-ups, 2 s upstreams, 1.6 s generations,
// Retry-After seconds (6: 7 s), a queue's paused deadlines (18b: 5 s) — to
// keep `npm test` under five minutes on two cores (a fresh clone's run was at
// ~300 s with them). What those sections measure has its own tests (the retry
// storm in llm's retryStorm test, the queue in @hourglass/bullmq's); `npm run
// bench` (and `--quick` without `--only`) runs every section. Section 2 is
// left out too: its quick run starts nine processes (9 s of CPU); section 9
// exercises the same child-process harness, and `npm run bench` runs 2.
const SMOKE_ONLY = ['3', '8', '9']
const SECTIONS = ['3. Core cost', '8. SSE re-assembly', '9. Gateway overhead']
// A guard against a hang, not a synchronisation: the smoke run takes ~20 s on 2 loaded cores.
const KILL_AFTER_MS = 150_000

interface Run {
  code: number | null
  signal: NodeJS.Signals | null
  stderr: string
  elapsedMs: number
}

function runBench(args: string[]): Promise<Run> {
  const started = performance.now()
  const child = spawn(process.execPath, ['bench/run.js', ...args], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const killer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS)
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(killer)
      resolve({ code, signal, stderr, elapsedMs: performance.now() - started })
    })
  })
}

const dir = mkdtempSync(join(tmpdir(), 'hourglass-bench-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('npm run bench', () => {
  it('is what npm run bench runs, after building', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
    expect(pkg.scripts.bench).toMatch(/^npm run build\b.*&& node bench\/run\.js$/)
  })

  it('the --quick smoke run completes with exit 0, reports every benchmark with a figure, and leaves BENCHMARKS.md alone', {
    timeout: KILL_AFTER_MS + 10_000,
  }, async () => {
    const missing = PACKAGES.filter(
      (name) => !existsSync(join(root, 'packages', name, 'dist', 'index.js')),
    )
    expect(missing, `run \`npm run build\` first: no dist for ${missing.join(', ')}`).toEqual([])
    const committed = join(root, 'BENCHMARKS.md')
    const before = existsSync(committed) ? statSync(committed).mtimeMs : undefined
    const out = join(dir, 'quick.md')

    const run = await runBench(['--quick', '--only', SMOKE_ONLY.join(','), '--out', out])

    expect(run.signal, `killed after ${KILL_AFTER_MS / 1000} s`).toBeNull()
    expect(run.code, run.stderr.slice(-4000)).toBe(0)
    const report = readFileSync(out, 'utf8')
    expect(report).toMatch(/Smoke run \(`--quick`\)/)
    expect(report).toMatch(/Made by `npm run bench -- --quick`/)
    expect(report).toMatch(/Machine: \d+ CPUs \(.+\).*Node v\d+/)
    for (const section of SECTIONS) {
      const start = report.indexOf(`## ${section}`)
      expect(start, `section "${section}" is missing`).toBeGreaterThan(-1)
      const end = report.indexOf('\n## ', start + 1)
      const body = report.slice(start, end === -1 ? undefined : end)
      // A table with at least one measured row: a number in the "ours" column.
      const rows = body.split('\n').filter((l) => /^\| (?!measure|---)/.test(l))
      expect(rows.length, `section "${section}" has no rows`).toBeGreaterThan(0)
      for (const r of rows) expect(r.split('|')[4], r).toMatch(/\d/)
    }
    expect(existsSync(committed) ? statSync(committed).mtimeMs : undefined).toBe(before)
  })
})
