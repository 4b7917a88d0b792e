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

describe("the demo report's last words", () => {
  const closing = (report: string) => report.slice(report.lastIndexOf('\n\n') + 2)

  it('say the toolkit chain answered by the deadline when the figures show it', () => {
    const report = renderDemo({
      ...figures,
      toolkit: chain({ timeouts504: 5, timeout504VsDeadlineMs: { median: -12, max: -1 } }),
    })
    expect(closing(report)).toMatch(/^The toolkit chain answered every request by its deadline/)
  })

  it.each([
    ['a 200 after the deadline', chain({ late: 2, latestAnswerVsDeadlineMs: 148 })],
    [
      'a 504 after the deadline',
      chain({ timeouts504: 3, timeout504VsDeadlineMs: { median: -3, max: 20 } }),
    ],
    ['a client that gave up', chain({ gaveUp: 1 })],
  ])('do not claim it when the table shows %s', (_what, toolkit) => {
    const report = renderDemo({ ...figures, toolkit })
    expect(report).not.toMatch(/answered every request by its deadline/)
    expect(closing(report)).toMatch(/^In this run the toolkit chain missed deadlines/)
    for (const l of report.split('\n')) expect(l.length).toBeLessThanOrEqual(80)
  })

  it('count what they judge: a run whose only misses are late 504s says so', () => {
    // The closing used to count late 200s and unanswered requests only, and
    // read "missed deadlines (0 late or unanswered, latest answer +40 ms)".
    const toolkit = chain({
      timeouts504: 4,
      timeout504VsDeadlineMs: { median: -200, max: 40 },
      latestAnswerVsDeadlineMs: 40,
    })
    const words = closing(renderDemo({ ...figures, toolkit })).replace(/\n/g, ' ')
    expect(words).not.toMatch(/\b0 late/)
    expect(words).toMatch(
      /^In this run the toolkit chain missed deadlines \(504s up to \+40 ms past their deadlines\):/,
    )
  })

  it('do not say the work stopped when the figures show work going on after an answer', () => {
    // It judged by answers alone: upstream work past an answer (the table's
    // zombie rows) still read "…and stopped working for it then".
    const toolkit = chain({
      zombie: { requests: 2, totalMs: 900, maxMs: 600, stillRunningAtEnd: 0 },
    })
    const words = closing(renderDemo({ ...figures, toolkit })).replace(/\n/g, ' ')
    expect(words).not.toMatch(/^The toolkit chain answered every request by its deadline/)
    expect(words).toMatch(
      /^In this run the toolkit chain missed deadlines \(work for 2 requests went on after their answers\):/,
    )
    const one = chain({ zombie: { requests: 0, totalMs: 0, maxMs: 0, stillRunningAtEnd: 1 } })
    expect(closing(renderDemo({ ...figures, toolkit: one })).replace(/\n/g, ' ')).toMatch(
      /\(work for 1 request went on after its answer\)/,
    )
  })

  it('name every kind of miss, each once', () => {
    const toolkit = chain({
      late: 2,
      gaveUp: 1,
      timeouts504: 1,
      timeout504VsDeadlineMs: { median: 20, max: 20 },
      latestAnswerVsDeadlineMs: 148,
    })
    const report = renderDemo({ ...figures, toolkit })
    expect(closing(report).replace(/\n/g, ' ')).toMatch(
      /missed deadlines \(2 answered late, a 504 \+20 ms past its deadline, 1 unanswered, latest answer \+148 ms\):/,
    )
    for (const l of report.split('\n')) expect(l.length).toBeLessThanOrEqual(80)
  })
})
