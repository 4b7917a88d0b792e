import { expect, it } from 'vitest'
import { luaNumber } from '../src/luaNumber.js'

// As Redis's Lua `tonumber` reads what BullMQ's scripts are given.
it('reads a string as Lua tonumber does', () => {
  expect(luaNumber('60000')).toBe(60_000)
  expect(luaNumber(' 5 ')).toBe(5)
  expect(luaNumber('1e3')).toBe(1000)
  expect(luaNumber('0x10')).toBe(16)
  expect(luaNumber('inf')).toBe(Number.POSITIVE_INFINITY)
  expect(luaNumber('-Infinity')).toBe(Number.NEGATIVE_INFINITY)
  // JS-only numerals, nil to Lua: left as they are (no delay).
  expect(luaNumber('0b101')).toBe('0b101')
  expect(luaNumber('0o7')).toBe('0o7')
  expect(luaNumber('')).toBe('')
  expect(luaNumber(1500)).toBe(1500)
  expect(luaNumber(undefined)).toBeUndefined()
})
