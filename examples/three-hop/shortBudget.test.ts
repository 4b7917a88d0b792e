import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A shorter budget, as a user trying one would set: the requests run out
// before the model service calls the provider. The example waited for the
// provider's second call, which never came: it printed its two 504s and
// never exited.
it('three-hop: with a budget too short to reach the provider, it says so and exits, not waiting for a call that never comes', async () => {
  const run = await runExampleWith(import.meta.url, './shortBudget.mjs', 'llm')
  expect({ code: run.code, signal: run.signal }, run.stderr).toEqual({ code: 0, signal: null })
  const lines = run.stdout.trimEnd().split('\n')
  for (const line of lines.slice(0, 2)) {
    expect(line).toMatch(/ → 504 after \d+ ms: \{"error":"deadline_exceeded","budgetMs":5,/)
  }
  expect(lines[2]).toBe('provider: 0 calls, 0 paid; the slow one never reached it')
})
