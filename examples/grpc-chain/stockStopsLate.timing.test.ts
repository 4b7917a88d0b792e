import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A timing file (run alone): the slow item's stock hop is reached within its
// 300 ms budget, which a loaded machine could run out first.
//
// Each hop's deadline ends only a reserve (10 ms on an idle machine) before
// its caller's, so on a busy machine the slow stock lookup's timer can run
// after the edge has answered. The example printed at once, before that
// handler had stopped: "the slow stock lookup not reached", under a budgets
// line giving stock its 268 ms.
it('grpc-chain: a slow stock lookup that stops only after the edge answered is reported stopped, not "not reached"', async () => {
  const run = await runExampleWith(import.meta.url, './stockStopsLate.mjs', 'grpc')
  expect(run.code, run.stderr).toBe(0)
  const [, , slow, slowBudgets, outcome] = run.stdout.trimEnd().split('\n')
  expect(slow).toMatch(/^budget 300 ms → 504 after \d+ ms: /)
  expect(slowBudgets).toMatch(/ → stock \d+ ms \(HTTP\)$/)
  expect(outcome).toMatch(
    /^ {2}inventory answered DEADLINE_EXCEEDED; the slow stock lookup stopped: \w+Error after \d+ ms$/,
  )
})
