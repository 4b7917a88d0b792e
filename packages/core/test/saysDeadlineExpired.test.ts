import { describe, expect, it } from 'vitest'
import { saysDeadlineExpired } from '../src/index.js'

describe('saysDeadlineExpired', () => {
  it('1, alone or first in a field sent twice, with HTTP optional whitespace', () => {
    for (const v of ['1', ' 1\t', '1, 1', '1,0']) expect(saysDeadlineExpired(v), v).toBe(true)
  })
  it('anything else is no', () => {
    for (const v of [undefined, null, '', '0', '0, 1', 'true', '01', '1\u00a0', ' , 1'])
      expect(saysDeadlineExpired(v), String(v)).toBe(false)
  })
})
