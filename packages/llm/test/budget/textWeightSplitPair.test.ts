import { expect, it } from 'vitest'
import { textWeight } from '../../src/budget/textWeight.js'

// A stream may split a surrogate pair (an emoji) across two deltas; weights
// add up delta by delta, so the two halves must weigh what the whole does.
it('a surrogate pair split across two deltas weighs what it weighs whole', () => {
  const whole = 'x\u{1F600}y'
  expect(textWeight(whole)).toBe(6)
  expect(textWeight('x\ud83d') + textWeight('\ude00y')).toBe(textWeight(whole))
  // Each half alone: the high one carries the character.
  expect(textWeight('\ud83d')).toBe(4)
  expect(textWeight('\ude00')).toBe(0)
  expect(textWeight('日本')).toBe(8)
})
