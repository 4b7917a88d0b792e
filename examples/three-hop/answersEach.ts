import { expect } from 'vitest'
import { budgetAnswers } from '../../test/support/budgetAnswers.js'
import { runExampleWith } from '../../test/support/runExampleWith.js'

/**
 * Runs this example with the provider's fault that `hook` (a file beside
 * it) adds, and checks what its caller and the provider saw: both requests
 * answered `status` with `body`, then the provider's own line. One check
 * for every fault whose two requests end alike, so each test states only
 * what its fault changes.
 */
export async function expectEachAnswer(
  hook: string,
  answer: { status: number; body: unknown },
  provider: string,
): Promise<void> {
  const run = await runExampleWith(import.meta.url, hook, 'llm')
  expect(run.code, run.stderr).toBe(0)
  const lines = run.stdout.trimEnd().split('\n')
  expect(lines).toHaveLength(3)
  for (const got of budgetAnswers(lines.slice(0, 2))) {
    expect(got.status).toBe(answer.status)
    expect(got.body).toEqual(answer.body)
  }
  expect(lines[2]).toBe(provider)
}
