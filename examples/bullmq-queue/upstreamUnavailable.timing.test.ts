import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { assertBuilt, runNode } from '../../test/cli/runNode.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The job's processor returned whatever the upstream answered: a 503's body
// became the job's result, the job completed (no failedReason, no retry),
// and the example printed `— undefined` as its outcome.
it('bullmq-queue: a job whose upstream answers 503 fails, saying so, rather than completing with the error body as its result', async (ctx) => {
  assertBuilt(fileURLToPath(new URL('../../packages/bullmq/dist/index.js', import.meta.url)))
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  const run = await runNode(
    [
      '--import',
      fileURLToPath(new URL('./upstreamUnavailable.mjs', import.meta.url)),
      fileURLToPath(new URL('./index.mjs', import.meta.url)),
    ],
    { killAfterMs: 20_000 },
  )
  expect(run.code, run.stderr).toBe(0)
  const running = run.stdout.split('\n').find((line) => line.startsWith('running job 2 '))
  expect(running).toMatch(/ — upstream answered 503$/)
})
