import { describe, expect, it } from 'vitest'
import { hasHeader } from '../src/dispatchHeaders.js'

describe('hasHeader (the Idempotency-Key check on every call)', () => {
  it('finds a header in a Headers, an array of pairs or a record, in any letter case', () => {
    expect(hasHeader(new Headers({ 'Idempotency-Key': 'k' }), 'idempotency-key')).toBe(true)
    expect(hasHeader([['IDEMPOTENCY-KEY', 'k']], 'idempotency-key')).toBe(true)
    expect(hasHeader({ 'Idempotency-Key': 'k' }, 'idempotency-key')).toBe(true)
  })

  it('is false when the header is absent or there are no headers', () => {
    expect(hasHeader(new Headers({ accept: 'x' }), 'idempotency-key')).toBe(false)
    expect(hasHeader([['accept', 'x']], 'idempotency-key')).toBe(false)
    expect(hasHeader({ accept: 'x' }, 'idempotency-key')).toBe(false)
    expect(hasHeader(undefined, 'idempotency-key')).toBe(false)
  })
})
