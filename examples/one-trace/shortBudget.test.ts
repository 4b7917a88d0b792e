import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A shorter budget, as a user trying one would set: the request runs out
// before its last hops, which have no span. Their budgets printed as `NaN ms`.
it('one-trace: with a budget too short to reach every hop, the hops not reached say so, not NaN ms', async (ctx) => {
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  const run = await runExampleWith(import.meta.url, './shortBudget.mjs', 'otel')
  expect(run.code, run.stderr).toBe(0)
  const [answer, budgets] = run.stdout.split('\n')
  expect(answer).toMatch(/ → 504 \{"error":"deadline_exceeded","budgetMs":20,/)
  // The last hop, the prices service, is never reached within 20 ms (the job alone is a Redis round trip away).
  expect(budgets).toMatch(
    /^budgets: edge 20 ms \(HTTP\) → quotes (\d+ ms|not reached) \(gRPC\) → job (\d+ ms|not reached) \(queue\) → prices not reached \(HTTP\)$/,
  )
})
