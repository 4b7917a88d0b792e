import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { dispatchHasHeader, hasHeader, withDeadlineHeader } from '../src/dispatchHeaders.js'

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

describe('withDeadlineHeader (the headers each attempt sends) keeps the caller’s shape', () => {
  const deadline = Deadline.after(5000, { clock: new ManualClock() })

  it('a record gives a record: a copy of its own keys with ours set, the caller’s stale one dropped in any case', () => {
    const given = Object.assign(Object.create({ inherited: '1' }), {
      authorization: 'Bearer t',
      'X-Deadline-Remaining-Ms': '99999',
    })
    const { headers } = withDeadlineHeader(given, deadline)
    // Before: a flat array, which undici's retry resume spread into
    // numbered headers ("1": "Bearer t").
    expect(headers).toEqual({ authorization: 'Bearer t', 'x-deadline-remaining-ms': '5000' })
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype)
    expect(given['X-Deadline-Remaining-Ms']).toBe('99999') // the caller's own object is left alone
    // A key named __proto__ (JSON.parse makes one) is a key, not the prototype.
    const parsed = withDeadlineHeader(JSON.parse('{"__proto__":"x"}'), deadline).headers
    expect(Object.keys(parsed)).toEqual(['__proto__', 'x-deadline-remaining-ms'])
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype)
    // No deadline at all: the caller's record as it is.
    expect(withDeadlineHeader(given, undefined).headers).toBe(given)
  })

  it('a flat array gives a flat array', () => {
    expect(withDeadlineHeader(['a', '1'], deadline).headers).toEqual([
      'a',
      '1',
      'x-deadline-remaining-ms',
      '5000',
    ])
  })

  it('an iterable of pairs gives a record: a repeated name an array, as undici reads one', () => {
    const pairs = [
      ['accept', 'a'],
      ['X-Deadline-Remaining-Ms', '99999'],
      ['skipped', undefined],
      ['accept', ['b', 'c']],
      ['accept', null],
      ['__proto__', 'x'],
      ['__proto__', 'y'],
    ]
    // Before: a flat array, which undici's retry resume spread into
    // numbered headers ("1": "Bearer t").
    const { headers } = withDeadlineHeader(
      new Map([['authorization', 'Bearer t']]) as never,
      deadline,
    )
    expect(headers).toEqual({ authorization: 'Bearer t', 'x-deadline-remaining-ms': '5000' })
    const grouped = withDeadlineHeader(new Set(pairs) as never, deadline).headers as Record<
      string,
      unknown
    >
    expect(Object.keys(grouped)).toEqual(['accept', '__proto__', 'x-deadline-remaining-ms'])
    expect(grouped['accept']).toEqual(['a', 'b', 'c', null])
    // A name __proto__ is a key, given twice too, never the prototype.
    expect(Object.getOwnPropertyDescriptor(grouped, '__proto__')?.value).toEqual(['x', 'y'])
    expect(Object.getPrototypeOf(grouped)).toBe(Object.prototype)
    // No deadline at all: a record still, the caller's own header kept.
    const stale = new Headers({ a: '1', 'x-deadline-remaining-ms': '7' })
    expect(withDeadlineHeader(stale as never, undefined)).toEqual({
      headers: { a: '1', 'x-deadline-remaining-ms': '7' },
      headerMs: undefined,
    })
  })

  it('pairs repeating a header undici takes one value of (connection, content-type) stay pairs: an array of them it refuses', () => {
    // Merged, undici threw "invalid connection header" where it sent the pairs alone.
    const pairs = new Map([['x-a', '1']]).entries()
    const repeated = [['connection', 'keep-alive'], ['connection', 'keep-alive'], ...pairs]
    expect(withDeadlineHeader(new Set(repeated) as never, deadline).headers).toEqual([
      'connection',
      'keep-alive',
      'connection',
      'keep-alive',
      'x-a',
      '1',
      'x-deadline-remaining-ms',
      '5000',
    ])
  })

  it('under a deadline that writes none (never()), the caller’s is dropped in every shape, and a record without it is not copied', () => {
    const never = Deadline.never()
    const plain = { authorization: 'Bearer t' }
    expect(withDeadlineHeader(plain, never)).toEqual({ headers: plain, headerMs: undefined })
    expect(withDeadlineHeader(plain, never).headers).toBe(plain)
    const given = { authorization: 'Bearer t', 'X-Deadline-Remaining-Ms': '99999' }
    expect(withDeadlineHeader(given, never).headers).toEqual({ authorization: 'Bearer t' })
    expect(given['X-Deadline-Remaining-Ms']).toBe('99999') // the caller's own object is left alone
    expect(withDeadlineHeader(['a', '1', 'x-deadline-remaining-ms', '7'], never).headers).toEqual([
      'a',
      '1',
    ])
    const pairs = new Map([
      ['a', '1'],
      ['x-deadline-remaining-ms', '7'],
    ])
    expect(withDeadlineHeader(pairs as never, never).headers).toEqual({ a: '1' })
  })

  it('a shape undici refuses is returned as given, for undici to refuse', () => {
    // A pair of three; a name that is no string (undici throws on it).
    for (const given of [[['a', '1', '2']], [[1, 'x']]]) {
      const iterable = new Set(given)
      expect(withDeadlineHeader(iterable as never, deadline).headers).toBe(iterable)
    }
  })
})
