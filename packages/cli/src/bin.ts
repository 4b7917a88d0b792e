#!/usr/bin/env node
// The `hourglass` command. Until the full demo lands, `demo` shows one request's
// budget split into slices and what happens when a slice runs long.
import { setTimeout as sleep } from 'node:timers/promises'
import { Deadline, isDeadlineExceeded } from '@hourglass/core'

async function demo(): Promise<void> {
  const deadline = Deadline.after(300)
  const plan = deadline.plan(
    { dns: 0.05, preprocess: 0.15, model: 0.7, write: 0.1 },
    { reserveMs: 10 },
  )
  try {
    await plan.run('dns', () => sleep(5))
    await plan.run('preprocess', () => sleep(20))
    // The "model" ignores its signal and would take 1 s: the slice stops waiting for it.
    await plan.run('model', () => sleep(1000))
  } catch (error) {
    if (!isDeadlineExceeded(error)) throw error
    console.log(`504 after ${Math.round(deadline.elapsed())} ms: ${error.message}`)
  }
  console.log('slice        allotted    used  outcome')
  for (const row of plan.report()) {
    console.log(
      `${row.name.padEnd(12)} ${String(Math.round(row.allottedMs)).padStart(8)} ${String(Math.round(row.usedMs)).padStart(7)}  ${row.outcome}`,
    )
  }
  deadline.dispose()
}

const [command] = process.argv.slice(2)
if (command === 'demo' || command === undefined) {
  await demo()
} else {
  console.error(`hourglass: unknown command "${command}" (try: hourglass demo)`)
  process.exit(2)
}
