import { describe, expect, it } from 'vitest'
import { isSseBufferOverflow } from '../../src/errors/SseBufferOverflowError.js'
import { decodeSse, SseDecoder } from '../../src/sse/SseDecoder.js'

// `maxBufferChars` bounds what a stream may buffer without completing an
// event. A NaN or a negative number was read as 0 — unlimited — and a string
// was handed to the parser as it was: the bound a proxy set was silently off,
// and a stream that never ends an event was buffered until memory ran out.

const enc = new TextEncoder()

describe('SseDecoder maxBufferChars', () => {
  it.each([
    [Number.NaN, RangeError],
    [-1, RangeError],
    [Number.NEGATIVE_INFINITY, RangeError],
    ['1000', TypeError],
  ])('%s is refused, naming the option', (value, type) => {
    expect(() => new SseDecoder({ maxBufferChars: value as number })).toThrow(type)
    expect(() => new SseDecoder({ maxBufferChars: value as number })).toThrow(
      /SseDecoder: maxBufferChars/,
    )
  })

  it('decodeSse refuses it before reading the body', async () => {
    let read = false
    async function* body() {
      read = true
      yield enc.encode('data: a\n\n')
    }
    await expect(decodeSse(body(), { maxBufferChars: Number.NaN }).next()).rejects.toThrow(
      RangeError,
    )
    expect(read).toBe(false)
  })

  it('0 and Infinity mean no bound; a number bounds', () => {
    const long = enc.encode(`data: ${'x'.repeat(100_000)}`)
    for (const maxBufferChars of [0, Number.POSITIVE_INFINITY]) {
      expect(new SseDecoder({ maxBufferChars }).push(long)).toEqual([])
    }
    const bounded = new SseDecoder({ maxBufferChars: 1000 })
    let thrown: unknown
    try {
      bounded.push(long)
    } catch (error) {
      thrown = error
    }
    expect(isSseBufferOverflow(thrown)).toBe(true)
  })
})
