import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The job's processor returned whatever the prices service answered: a 503's
// body became the job's result, the gRPC hop's OK, and the edge's 200
// {"error":"prices database down"} — a failure served as a quote.
it('one-trace: prices answering 503 fails the job and the request, rather than being served as a 200 quote', async (ctx) => {
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  const run = await runExampleWith(import.meta.url, './pricesUnavailable.mjs', 'otel')
  expect(run.code, run.stderr).toBe(0)
  // The job failed; the gRPC hop answered an error, the edge Express's 500 page.
  expect(run.stdout).toMatch(/^GET \/quote\/apples with 1000 ms → 500 /)
})
