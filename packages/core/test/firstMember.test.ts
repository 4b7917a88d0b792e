import { expect, it } from 'vitest'
import { firstMember } from '../src/index.js'

it('the first member of a field sent twice, without HTTP optional whitespace only', () => {
  expect(firstMember('100')).toBe('100')
  expect(firstMember('100, 100')).toBe('100')
  expect(firstMember(' \t0 ,1')).toBe('0')
  expect(firstMember('false,false')).toBe('false')
  expect(firstMember('')).toBe('')
  // Not other whitespace: a no-break space stays, and the value reads as no number.
  expect(firstMember('1\u00a0')).toBe('1\u00a0')
})
