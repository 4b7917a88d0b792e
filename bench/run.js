#!/usr/bin/env node
// `npm run bench` — every benchmark of issue 9 in one run, written to
// BENCHMARKS.md. `--quick` is the CI smoke version: small counts, checks that
// everything completes, never overwrites BENCHMARKS.md (stdout or --out).
import { existsSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { render } from './lib/report.js'

const root = new URL('../', import.meta.url)
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    only: { type: 'string' },
  },
})

const missing = ['core', 'express', 'fetch', 'testkit', 'llm', 'gateway', 'bullmq'].filter(
  (name) => !existsSync(new URL(`packages/${name}/dist/index.js`, root)),
)
if (missing.length > 0) {
  console.error(
    `bench: packages not built (${missing.join(', ')}): run \`npm run build\` first (\`npm run bench\` does).`,
  )
  process.exit(2)
}

const all = [
  ['1', './sections/ingress.js'],
  ['2', './sections/egress.js'],
  ['3', './sections/coreCost.js'],
  ['4', './sections/deadlineUnderLoad.js'], // items 4 and 5 share one experiment
  ['6', './sections/rateLimitStorm.js'],
  ['7', './sections/paidGenerations.js'],
  ['8', './sections/sseRecut.js'],
  ['9', './sections/gatewayOverhead.js'],
  ['18b', './sections/queueDeadlines.js'], // issue 18: @hourglass/bullmq
]
const only = values.only?.split(',')
const chosen = only ? all.filter(([id]) => only.includes(id)) : all

const quick = values.quick
const log = (message) => process.stderr.write(`bench: ${message}\n`)
const startedAt = new Date()
const t0 = performance.now()
const sections = []
let failed = false
for (const [id, path] of chosen) {
  const started = performance.now()
  log(`${id}: ${path} …`)
  try {
    const mod = await import(path)
    const produced = await mod.run({ quick, log })
    sections.push(...(Array.isArray(produced) ? produced : [produced]))
  } catch (error) {
    failed = true
    log(`${id} failed: ${error?.stack ?? error}`)
    sections.push({
      id,
      title: `${path} did not complete`,
      setup: `**ERROR**: \`${String(error?.message ?? error).split('\n')[0]}\``,
      rows: [],
    })
  }
  log(`${id}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}

const command = quick ? 'npm run bench -- --quick' : 'npm run bench'
const text = render({ sections, command, quick, startedAt, elapsedMs: performance.now() - t0 })
if (values.out) writeFileSync(values.out, text)
else if (quick || only) process.stdout.write(text)
else writeFileSync(fileURLToPath(new URL('BENCHMARKS.md', root)), text)
log(`finished in ${((performance.now() - t0) / 1000).toFixed(1)} s${failed ? ' with errors' : ''}`)
// Lingering keep-alive sockets or unref'd timers must not hold the run open.
process.exit(failed ? 1 : 0)
