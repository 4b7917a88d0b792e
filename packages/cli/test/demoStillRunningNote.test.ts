import { expect, it } from 'vitest'
import type { DemoFigures } from '../src/demo/DemoFigures.js'
import { renderDemo } from '../src/demo/renderDemo.js'
import type { ChainFigures } from '../src/demo/summarize.js'

// The note under the table when work still ran as the demo stopped read
// "(≥: 1 requests were still being worked on …)" for the commonest count.

const chain = (stillRunningAtEnd: number): ChainFigures => ({
  requests: 30,
  onTime: 15,
  onTimeByBudget: { '300': { onTime: 0, requests: 10 } },
  late: 0,
  timeouts504: 0,
  timeout504VsDeadlineMs: null,
  latestAnswerVsDeadlineMs: null,
  otherErrors: 0,
  gaveUp: 0,
  zombie: { requests: 8, totalMs: 8000, maxMs: 3700, stillRunningAtEnd },
  providerCalls: 30,
  paidGenerations: 15,
  paidPerDelivered: 1,
})

const note = (naiveStill: number) =>
  renderDemo({
    seed: 7,
    budgetsMs: [300, 1000, 2000],
    graceMs: 250,
    elapsedMs: 7000,
    toolkit: chain(0),
    naive: chain(naiveStill),
    waterfall: null,
  } satisfies DemoFigures)
    .split('\n')
    .find((line) => line.startsWith('(≥:'))

it.each([
  [1, '(≥: 1 request was still being worked on when the demo stopped)'],
  [3, '(≥: 3 requests were still being worked on when the demo stopped)'],
])('%i still running: the note counts it in good English', (still, expected) => {
  expect(note(still)).toBe(expected)
})
