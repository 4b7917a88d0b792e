import { describe, expect, it } from 'vitest'
import { dispatchHasHeader, hasHeader } from '../src/dispatchHeaders.js'

describe('hasHeader (the Idempotency-Key check on every call)', () => {
  it('finds a header in a Headers, an array of pairs or a record, in any letter case', () => {
    expect(hasHeader(new Headers({ 'Idempotency-Key': 'k' }), 'idempotency-key')).toBe(true)
    expect(hasHeader([['IDEMPOTENCY-KEY', 'k']], 'idempotency-key')).toBe(true)
    expect(hasHeader({ 'Idempotency-Key': 'k' }, 'idempotency-key')).toBe(true)
  })

  it('reads any other iterable as fetch reads it, a sequence of pairs: a Map is not asked by its get()', () => {
    // fetch sends this Map's entries; Map.get('idempotency-key') found no key (case).
    expect(hasHeader(new Map([['Idempotency-Key', 'k']]), 'idempotency-key')).toBe(true)
    expect(hasHeader(new Set([['idempotency-key', 'k']]), 'idempotency-key')).toBe(true)
  })

  it('is false when the header is absent or there are no headers', () => {
    expect(hasHeader(new Headers({ accept: 'x' }), 'idempotency-key')).toBe(false)
    expect(hasHeader([['accept', 'x']], 'idempotency-key')).toBe(false)
    expect(hasHeader({ accept: 'x' }, 'idempotency-key')).toBe(false)
    expect(hasHeader(undefined, 'idempotency-key')).toBe(false)
  })

  it('a name with no value is no header: empty, blank, undefined or null', () => {
    expect(hasHeader(new Headers({ 'Idempotency-Key': '' }), 'idempotency-key')).toBe(false)
    expect(hasHeader([['Idempotency-Key', ' ']], 'idempotency-key')).toBe(false)
    expect(hasHeader({ 'Idempotency-Key': undefined }, 'idempotency-key')).toBe(false)
    expect(hasHeader({ 'Idempotency-Key': null }, 'idempotency-key')).toBe(false)
  })
})

describe('dispatchHasHeader (the same check on undici dispatch headers)', () => {
  it('finds a header with a value in a flat array, an iterable of pairs or a record', () => {
    expect(dispatchHasHeader(['Idempotency-Key', 'k'], 'idempotency-key')).toBe(true)
    expect(dispatchHasHeader(new Map([['idempotency-key', 'k']]), 'idempotency-key')).toBe(true)
    expect(dispatchHasHeader({ 'IDEMPOTENCY-KEY': ['k'] }, 'idempotency-key')).toBe(true)
  })

  it('a name whose value undici would not send (undefined) or that is empty does not count', () => {
    expect(dispatchHasHeader({ 'idempotency-key': undefined }, 'idempotency-key')).toBe(false)
    expect(dispatchHasHeader({ 'idempotency-key': [] }, 'idempotency-key')).toBe(false)
    expect(dispatchHasHeader(['idempotency-key', ''], 'idempotency-key')).toBe(false)
    expect(
      dispatchHasHeader(new Map([['idempotency-key', undefined]]) as never, 'idempotency-key'),
    ).toBe(false)
  })
})
