import { Deadline, SlicePlan } from '@hourglass/core'
import type { SuggestedTimeouts } from '@hourglass/fetch'
import { describe, expect, it } from 'vitest'
import { pasteableSettings } from '../../packages/cli/src/probe/renderProbe.js'

const suggested = (sliceMs: number, budgetMs: number): SuggestedTimeouts => ({
  dnsTimeoutMs: undefined,
  connectTimeoutMs: undefined,
  headersTimeoutMs: 500,
  bodyTimeoutMs: 500,
  sliceMs,
  share: sliceMs / budgetMs,
  fits: true,
  cuts: [],
  warnings: [],
})

describe("probe's settings to paste", () => {
  it('a slice that is a tiny part of a long budget keeps a share the planner takes', () => {
    // `probe <url> --budget 2147483647` on a 300 ms endpoint: 933 ms of it.
    const { slice } = pasteableSettings(suggested(933, 2_147_483_647)) as {
      slice: { ms: number; share: number }
    }
    expect(slice.share).toBeGreaterThan(0)
    // Three significant digits of it.
    expect(slice.share).toBe(4.34e-7)
    using deadline = Deadline.after(60_000)
    expect(() => new SlicePlan(deadline, { model: slice.share })).not.toThrow()
  })

  it('a share of a short budget is printed to three significant digits', () => {
    const { slice } = pasteableSettings(suggested(700, 3000)) as { slice: { share: number } }
    expect(slice.share).toBe(0.233)
  })
})
