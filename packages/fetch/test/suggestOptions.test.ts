import { describe, expect, it } from 'vitest'
import { suggestTimeouts } from '../src/index.js'
import { probeResult } from './support/probeResult.js'

// suggestTimeouts' own options are checked as every numeric option is: a
// NaN (`Number(process.env.HEADROOM)` with the variable unset), a string or
// a negative number was taken as it was, and every suggestion came out NaN
// — `sliceMs: NaN` with `fits: true` and no warning — or, for a negative
// floor, below the floor it asked for. A misspelt key (`headRoom`) was
// ignored: the default applied, silently. No call is made here.

const result = probeResult

function refusal(options: unknown): unknown {
  try {
    suggestTimeouts(result, 1000, options as never)
  } catch (error) {
    return error
  }
  throw new Error('expected the options to be refused')
}

describe('suggestTimeouts options', () => {
  it('refuses a multiplier or floor that is not a finite number ≥ 0, naming it', () => {
    expect(refusal({ headroom: Number.NaN })).toMatchObject({
      name: 'RangeError',
      message: 'headroom must be a finite number ≥ 0, got NaN',
    })
    expect(refusal({ maxHeadroom: 'x' })).toMatchObject({
      name: 'TypeError',
      message: "maxHeadroom must be a finite number ≥ 0, got 'x' (a string)",
    })
    expect(refusal({ headroom: -1 })).toMatchObject({ name: 'RangeError' })
    expect(refusal({ maxHeadroom: Number.POSITIVE_INFINITY })).toMatchObject({
      name: 'RangeError',
    })
    expect(refusal({ floorMs: -5 })).toMatchObject({
      name: 'RangeError',
      message: 'floorMs must be a finite number ≥ 0 (ms), got -5',
    })
  })

  it('refuses a key it does not take, naming the one meant', () => {
    const error = refusal({ headRoom: 3 })
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(
      /unknown option "headRoom" \(did you mean headroom\?\)/,
    )
    expect(refusal(null)).toBeInstanceOf(TypeError)
  })

  it('still takes 0 and the defaults', () => {
    expect(suggestTimeouts(result, 1000, { headroom: 0, floorMs: 0 }).headersTimeoutMs).toBe(163)
    expect(suggestTimeouts(result, 1000, {}).headersTimeoutMs).toBe(240)
    expect(suggestTimeouts(result, 1000, undefined).headersTimeoutMs).toBe(240)
  })
})
