import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { assertBuilt, cliBin, runNode } from '../../test/cli/runNode.js'

// A shorter budget, as a user trying one would set: the requests run out
// before the model service calls the provider. The example waited for the
// provider's second call, which never came: it printed its two 504s and
// never exited.
it('three-hop: with a budget too short to reach the provider, it says so and exits, not waiting for a call that never comes', async () => {
  assertBuilt(cliBin)
  const run = await runNode(
    [
      '--import',
      fileURLToPath(new URL('./shortBudget.mjs', import.meta.url)),
      fileURLToPath(new URL('./index.mjs', import.meta.url)),
    ],
    { killAfterMs: 15_000 }, // a guard: a hang is killed, and the test fails on its signal
  )
  expect({ code: run.code, signal: run.signal }, run.stderr).toEqual({ code: 0, signal: null })
  const lines = run.stdout.trimEnd().split('\n')
  for (const line of lines.slice(0, 2)) {
    expect(line).toMatch(/ → 504 after \d+ ms: \{"error":"deadline_exceeded","budgetMs":5,/)
  }
  expect(lines[2]).toBe('provider: 0 calls, 0 paid; the slow one never reached it')
})
