import { describe, expect, it } from 'vitest'
import type { DemoFigures } from '../../packages/cli/src/demo/DemoFigures.js'
import { NAIVE_ATTEMPTS } from '../../packages/cli/src/demo/naiveChain.js'
import { renderDemo } from '../../packages/cli/src/demo/renderDemo.js'
import type { ChainFigures } from '../../packages/cli/src/demo/summarize.js'

const chain = (over: Partial<ChainFigures>): ChainFigures => ({
  requests: 30,
  onTime: 15,
  onTimeByBudget: { '300': { onTime: 0, requests: 10 } },
  late: 0,
  timeouts504: 0,
  timeout504VsDeadlineMs: null,
  latestAnswerVsDeadlineMs: null,
  otherErrors: 0,
  gaveUp: 0,
  zombie: { requests: 0, totalMs: 0, maxMs: 0, stillRunningAtEnd: 0 },
  providerCalls: 30,
  paidGenerations: 15,
  paidPerDelivered: 1,
  ...over,
})

const figures: DemoFigures = {
  seed: 7,
  budgetsMs: [300, 1000, 2000],
  graceMs: 250,
  elapsedMs: 7000,
  toolkit: chain({}),
  naive: chain({ late: 7, gaveUp: 8 }),
  waterfall: null,
}

describe('the demo report', () => {
  it("describes the naive chain's retry loop as it is: attempts in all, not retries", () => {
    // The naive chain makes NAIVE_ATTEMPTS attempts per call (the first and
    // NAIVE_ATTEMPTS − 1 retries); "retried 3×" said one retry too many.
    const report = renderDemo(figures)
    const line = report.split('\n').find((l) => l.startsWith('  naive:'))
    expect(line).toBe(
      `  naive:   30 s timeout per hop, up to ${NAIVE_ATTEMPTS} attempts per call, nothing propagated`,
    )
    for (const l of report.split('\n')) expect(l.length).toBeLessThanOrEqual(80)
  })
})
