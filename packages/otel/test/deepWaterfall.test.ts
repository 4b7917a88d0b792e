import { formatWaterfall, type WaterfallSpan } from '@hourglass/otel'
import { expect, it } from 'vitest'

/**
 * A poll loop that starts its next round inside the current round's active
 * span (`setTimeout(poll)` within `startActiveSpan`) makes each round the
 * child of the one before: a trace one span wide and as deep as the process
 * is old. Drawn by recursion, one stack frame per level, formatWaterfall
 * threw "Maximum call stack size exceeded" somewhere past 6000 levels.
 */
function pollChain(rounds: number): WaterfallSpan[] {
  const spans: WaterfallSpan[] = []
  for (let i = 0; i < rounds; i++) {
    const parent = i === 0 ? undefined : `p${i - 1}`
    spans.push({
      name: 'poll',
      spanContext: () => ({ traceId: 'a'.repeat(32), spanId: `p${i}`, traceFlags: 1 }),
      parentSpanContext:
        parent === undefined
          ? undefined
          : { traceId: 'a'.repeat(32), spanId: parent, traceFlags: 1 },
      startTime: [1_700_000_000, i * 1000],
      endTime: [1_700_000_000, i * 1000 + 500],
      attributes: {},
      status: { code: 0 },
      events: [],
    })
  }
  return spans
}

it('draws a trace more than ten thousand levels deep, one line per span, in chain order', () => {
  // Past where recursion overflowed (6000–8000 levels), with room for a larger stack.
  const rounds = 12_000
  const rows = formatWaterfall(pollChain(rounds), { legend: false }).trimEnd().split('\n')
  expect(rows).toHaveLength(rounds + 1)
  // Each level one step further in, until the label column is full.
  expect(rows[1]?.slice(0, 8)).toBe(' poll   ')
  expect(rows[2]?.slice(0, 8)).toBe('   poll ')
  expect(rows[3]?.slice(0, 8)).toBe('     pol')
  expect(rows.at(-1)?.slice(0, 31)).toBe(`${' '.repeat(29)}~`.padEnd(31))
})
