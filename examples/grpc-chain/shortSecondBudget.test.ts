import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A shorter budget for the second request, as a user trying one would set:
// it runs out before any handler. The example printed the first request's
// budgets again as the second's (`seen` was never cleared), and the first
// one's gRPC status as the slow lookup's.
it("grpc-chain: a request whose budget reaches no handler prints none of the previous request's figures as its own", async () => {
  const run = await runExampleWith(import.meta.url, './shortSecondBudget.mjs', 'grpc')
  expect(run.code, run.stderr).toBe(0)
  const [, , slow, slowBudgets, outcome] = run.stdout.trimEnd().split('\n')
  expect(slow).toMatch(/ → 504 after \d+ ms: \{"error":"deadline_exceeded","budgetMs":5,/)
  expect(slowBudgets).toBe(
    "  handlers' budgets: edge not reached (HTTP) → inventory not reached (gRPC) → stock not reached (HTTP)",
  )
  expect(outcome).toBe('  inventory not called; the slow stock lookup not reached')
})
