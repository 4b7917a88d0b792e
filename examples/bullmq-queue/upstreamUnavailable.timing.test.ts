import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The job's processor returned whatever the upstream answered: a 503's body
// became the job's result, the job completed (no failedReason, no retry),
// and the example printed `— undefined` as its outcome.
it('bullmq-queue: a job whose upstream answers 503 fails, saying so, rather than completing with the error body as its result', async (ctx) => {
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  const run = await runExampleWith(import.meta.url, './upstreamUnavailable.mjs', 'bullmq')
  expect(run.code, run.stderr).toBe(0)
  const running = run.stdout.split('\n').find((line) => line.startsWith('running job 2 '))
  expect(running).toMatch(/ — upstream answered 503$/)
})
