import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { assertBuilt, runNode } from '../../test/cli/runNode.js'

// A shorter budget, as a user trying one would set: the request runs out
// before its last hops, which have no span. Their budgets printed as `NaN ms`.
it('one-trace: with a budget too short to reach every hop, the hops not reached say so, not NaN ms', async (ctx) => {
  assertBuilt(fileURLToPath(new URL('../../packages/otel/dist/index.js', import.meta.url)))
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  const run = await runNode(
    [
      '--import',
      fileURLToPath(new URL('./shortBudget.mjs', import.meta.url)),
      fileURLToPath(new URL('./index.mjs', import.meta.url)),
    ],
    { killAfterMs: 20_000 },
  )
  expect(run.code, run.stderr).toBe(0)
  const [answer, budgets] = run.stdout.split('\n')
  expect(answer).toMatch(/ → 504 \{"error":"deadline_exceeded","budgetMs":20,/)
  // The last hop, the prices service, is never reached within 20 ms (the job alone is a Redis round trip away).
  expect(budgets).toMatch(
    /^budgets: edge 20 ms \(HTTP\) → quotes (\d+ ms|not reached) \(gRPC\) → job (\d+ ms|not reached) \(queue\) → prices not reached \(HTTP\)$/,
  )
})
