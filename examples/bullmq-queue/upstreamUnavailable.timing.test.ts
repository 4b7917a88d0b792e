import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The job's processor returned whatever the upstream answered: a 503's body
// became the job's result, the job completed (no failedReason, no retry),
// and the example printed `— undefined` as its outcome. Then its call, failed
// at once, was reported aborted by the deadline ("0 ms after" it).
it('bullmq-queue: a job whose upstream answers 503 fails, saying so and that its call ended before the deadline, rather than completing with the error body as its result', async (ctx) => {
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  const run = await runExampleWith(import.meta.url, './upstreamUnavailable.mjs', 'bullmq')
  expect(run.code, run.stderr).toBe(0)
  const running = run.stdout.split('\n').find((line) => line.startsWith('running job 2 '))
  expect(running).toMatch(/ — upstream answered 503$/)
  // The 503 came at once, long before the job's deadline: the line said
  // "call aborted 0 ms after the deadline", as if the deadline had stopped it.
  expect(running).toMatch(/: call ended \d+ ms before the deadline — /)
})
