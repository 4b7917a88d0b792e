import { isSseBufferOverflow } from '@hourglass/llm'
import { describe, expect, it } from 'vitest'
import { SseRecutter } from '../../src/sse/SseRecutter.js'

const enc = new TextEncoder()
const dec = (b: Uint8Array | undefined) => new TextDecoder('utf-8', { fatal: true }).decode(b)

function recut(chunks: readonly Uint8Array[], recutter = new SseRecutter()): Uint8Array[] {
  const out: Uint8Array[] = []
  for (const c of chunks) {
    const piece = recutter.push(c)
    if (piece) out.push(piece)
  }
  const last = recutter.end()
  if (last) out.push(last)
  return out
}

describe('SseRecutter', () => {
  it('holds a half character back until its event is complete', () => {
    const bytes = enc.encode('data: 😀\n\n')
    const r = new SseRecutter()
    expect(r.push(bytes.subarray(0, 8))).toBeUndefined() // inside the emoji
    expect(dec(r.push(bytes.subarray(8)))).toBe('data: 😀\n\n')
  })

  it('cuts after every complete event, never inside one', () => {
    const out = recut([enc.encode('data: 一\n\ndata: 二\n'), enc.encode('\ndata: 三')])
    expect(out.map(dec)).toEqual(['data: 一\n\n', 'data: 二\n\n', 'data: 三'])
  })

  it('recognises blank lines written with \\r\\n, \\r and \\n, and a CRLF split across chunks', () => {
    const r = new SseRecutter()
    // A CRLF split across chunks is one line end, not two.
    expect(r.push(enc.encode('data: a\r'))).toBeUndefined()
    expect(dec(r.push(enc.encode('\n\r\n')))).toBe('data: a\r\n\r\n')
    expect(dec(r.push(enc.encode('data: b\r\r')))).toBe('data: b\r\r')
    expect(dec(r.push(enc.encode('data: c\n\n')))).toBe('data: c\n\n')
    expect(r.end()).toBeUndefined()
  })

  it('passes on an event whose lines end in a bare CR at once, not when the next byte arrives', () => {
    // A provider that ends lines with CR (the SSE spec allows it): its last
    // event was held until the stream closed, every other until the next one.
    const r = new SseRecutter()
    expect(dec(r.push(enc.encode('data: a\r\r')))).toBe('data: a\r\r')
    expect(dec(r.push(enc.encode('data: [DONE]\r\r')))).toBe('data: [DONE]\r\r')
    // A CRLF blank line cut between its CR and LF: the event goes at the CR,
    // the LF leads the next event's bytes (a parser skips it as CRLF's half).
    expect(dec(r.push(enc.encode('data: b\r\n\r')))).toBe('data: b\r\n\r')
    expect(dec(r.push(enc.encode('\ndata: c\r\n\r\n')))).toBe('\ndata: c\r\n\r\n')
    expect(r.end()).toBeUndefined()
  })

  it('does not count the LF that ends a CRLF cut between chunks against the next event', () => {
    // 32 bytes: `data: ` + 26 x's fits, as it does with no event before it.
    const r = new SseRecutter({ maxEventBytes: 32 })
    expect(dec(r.push(enc.encode('data: a\r\n\r')))).toBe('data: a\r\n\r')
    expect(dec(r.push(enc.encode(`\ndata: ${'x'.repeat(26)}`)))).toBe('\n')
    expect(dec(r.push(enc.encode('\r\n\r\n')))).toBe(`data: ${'x'.repeat(26)}\r\n\r\n`)
    expect(r.end()).toBeUndefined()
    // Past the limit after such an LF: the error at once, as with LF endings,
    // not put off to the next push behind a lone LF that completes nothing.
    // Nor behind any line endings that complete no event, and what they were
    // stays held: end() after the error hands back every byte.
    for (const [first, second] of [
      ['data: a\r\n\r', '\n'],
      ['data: a\r\n\r', '\n\r\n'],
      ['data: a\r\r', '\r'],
      ['data: a\n\n', '\r\n'],
    ] as const) {
      const over = new SseRecutter({ maxEventBytes: 32 })
      const out = dec(over.push(enc.encode(first)))
      const big = `${second}data: ${'x'.repeat(40)}`
      expect(() => over.push(enc.encode(big)), JSON.stringify(first + second)).toThrow(/32 bytes/)
      expect(out + dec(over.end())).toBe(first + big)
    }
    // So after an error put off behind a whole event: the chunk that meets it is held.
    const later = new SseRecutter({ maxEventBytes: 32 })
    const whole = `data: a\n\ndata: ${'x'.repeat(40)}`
    const first = dec(later.push(enc.encode(whole)))
    expect(first).toBe('data: a\n\n')
    expect(() => later.push(enc.encode('yy\n\n'))).toThrow(/32 bytes/)
    expect(first + dec(later.end())).toBe(`${whole}yy\n\n`)
  })

  it('drops a BOM split over three chunks and forwards the rest unchanged', () => {
    const out = recut([
      new Uint8Array([0xef]),
      new Uint8Array([0xbb]),
      new Uint8Array([0xbf]),
      enc.encode('data: x\n\n'),
    ])
    expect(out.map(dec)).toEqual(['data: x\n\n'])
  })

  it('at the end, flushes the unterminated rest cut back to whole characters', () => {
    const r = new SseRecutter()
    const bytes = enc.encode('data: 好')
    expect(r.push(bytes.subarray(0, bytes.length - 1))).toBeUndefined()
    expect(dec(r.end())).toBe('data: ')
    expect(r.droppedBytes).toBe(2)
  })

  it('throws a typed overflow error when one event outgrows maxEventBytes', () => {
    const r = new SseRecutter({ maxEventBytes: 32 })
    let caught: unknown
    try {
      r.push(enc.encode(`data: ${'x'.repeat(40)}`))
    } catch (error) {
      caught = error
    }
    expect(isSseBufferOverflow(caught)).toBe(true)
  })

  it('returns the events a chunk completed before the event that overflows, then throws', () => {
    // A proxy's loop: what push returns is written, an error ends the stream.
    const r = new SseRecutter({ maxEventBytes: 32 })
    const chunk = enc.encode(`data: one\n\ndata: two\n\ndata: ${'x'.repeat(40)}`)
    const out = r.push(chunk)
    // They were whole before the limit was passed: a client had them.
    expect(dec(out)).toBe('data: one\n\ndata: two\n\n')
    let caught: unknown
    try {
      r.push(enc.encode('more'))
    } catch (error) {
      caught = error
    }
    expect(isSseBufferOverflow(caught)).toBe(true)
  })

  it('an overflow with events returned is thrown by end() when no push follows', () => {
    const r = new SseRecutter({ maxEventBytes: 32 })
    expect(dec(r.push(enc.encode(`data: one\n\ndata: ${'x'.repeat(40)}`)))).toBe('data: one\n\n')
    let caught: unknown
    try {
      r.end()
    } catch (error) {
      caught = error
    }
    expect(isSseBufferOverflow(caught)).toBe(true)
    // Idempotent once thrown, as end() is: nothing of the oversized event.
    expect(r.end()).toBeUndefined()
  })

  it('refuses a maxEventBytes that is not a number ≥ 0, as SseDecoder refuses its bound, instead of holding without limit', () => {
    // `Number(process.env.MAX_EVENT_BYTES)` with the variable unset is NaN:
    // it read as "no limit", and one endless event was held whole in memory.
    for (const given of [Number.NaN, -1]) {
      expect(() => new SseRecutter({ maxEventBytes: given })).toThrow(
        expect.objectContaining({
          name: 'RangeError',
          code: 'GATEWAY_OPTION_INVALID',
          message: expect.stringContaining('SseRecutter: maxEventBytes must be a number ≥ 0'),
        }),
      )
    }
    expect(() => new SseRecutter({ maxEventBytes: '64' as unknown as number })).toThrow(
      expect.objectContaining({ name: 'TypeError', code: 'GATEWAY_OPTION_INVALID' }),
    )
    // 0 and Infinity are "no limit"; null is the default, as undefined.
    for (const unlimited of [0, Number.POSITIVE_INFINITY]) {
      const r = new SseRecutter({ maxEventBytes: unlimited })
      expect(r.push(enc.encode(`data: ${'x'.repeat(5000)}`))).toBeUndefined()
    }
    const byDefault = new SseRecutter({ maxEventBytes: null as unknown as undefined })
    expect(dec(byDefault.push(enc.encode('data: x\n\n')))).toBe('data: x\n\n')
  })
})
