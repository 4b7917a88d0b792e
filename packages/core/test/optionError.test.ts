import { describe, expect, it } from 'vitest'
import { optionError } from '../src/index.js'

describe('optionError: one shape for a bad option in every package', () => {
  it('is a RangeError for a number out of range (NaN and Infinity included), naming the option and the value', () => {
    for (const [value, shown] of [
      [-1, '-1'],
      [Number.NaN, 'NaN'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
    ] as const) {
      const error = optionError('withDeadline: maxMs', 'a finite number > 0', value)
      expect(error).toBeInstanceOf(RangeError)
      expect(error.message).toBe(`withDeadline: maxMs must be a finite number > 0, got ${shown}`)
    }
  })

  it('is a TypeError for a value of another type, a string shown as one (not read as the number)', () => {
    for (const [value, shown] of [
      ['100', "'100' (a string)"],
      [null, 'null'],
      [undefined, 'undefined'],
      [[1], 'an array'],
      [{}, 'an object'],
      [true, 'true'],
    ] as const) {
      const error = optionError('reserveMs', 'a finite number ≥ 0', value)
      expect(error).toBeInstanceOf(TypeError)
      expect(error).not.toBeInstanceOf(RangeError)
      expect(error.message).toBe(`reserveMs must be a finite number ≥ 0, got ${shown}`)
    }
  })
})
