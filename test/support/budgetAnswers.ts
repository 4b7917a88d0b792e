import { expect } from 'vitest'

/**
 * What an example printed for its requests: `budget <ms> ms → <status>
 * after <ms> ms: <JSON body>` lines, each as its status and parsed body. A
 * line of another shape fails the test, naming it.
 */
export function budgetAnswers(lines: readonly string[]): Array<{ status: number; body: unknown }> {
  return lines.map((line) => {
    const answer = /^budget \d+ ms → (\d+) after \d+ ms: (.*)$/.exec(line)
    expect(answer, line).not.toBeNull()
    return { status: Number(answer![1]), body: JSON.parse(answer![2]!) as unknown }
  })
}
