import { isUtf8 } from 'node:buffer'
import { isSseBufferOverflow, SseDecoder, type SseFrame } from '@hourglass/llm'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { fuzzRuns } from '../support/fuzzRuns.js'

/**
 * What packages/llm/test/sse/sseFuzz.test.ts does not try: hostile streams.
 * 10,000 streams in `npm test` (200,000 under `HOURGLASS_SOAK=long`, or
 * `HOURGLASS_FUZZ_RUNS`; 50,000 until session 50) built from SSE's own tokens and garbage — `__proto__` and
 * `constructor` as event names and ids, NUL in ids, `retry:` junk, fields
 * without colons, lone CRs, BOMs mid-stream, invalid and truncated UTF-8,
 * 100 kB lines — each decoded whole and cut at random points. The decoder
 * answers the same frames however the bytes are cut, every frame is well
 * formed, valid UTF-8 never decodes to U+FFFD, and nothing throws but the
 * typed overflow error. The property asserts it drew every kind of stream
 * the generator makes (with and without a 100 kB line, valid and invalid
 * UTF-8, cut byte by byte and at random points, decoding to events and to
 * comments), so the smaller count still reaches each branch.
 */
const RUNS = fuzzRuns(10_000, 200_000)

const enc = new TextEncoder()
/** SSE's own tokens and hostile names, encoded once: a stream is their bytes. */
const TOKENS = [
  'data: ',
  'data:',
  'data',
  'event: ',
  'event: __proto__',
  'event: constructor',
  'event:error',
  'id: ',
  'id: __proto__',
  'id: a\u0000b',
  'retry: 10',
  'retry: -1',
  'retry: 1e999',
  ': keep-alive',
  ':',
  ' : x',
  '\n',
  '\r',
  '\r\n',
  '\n\n',
  '\r\r',
  '\uFEFF',
  '{"__proto__":{"polluted":1}}',
  '你好',
  '🎉',
  '[DONE]',
].map((t) => enc.encode(t))
const token = fc.oneof(
  fc.constantFrom(...TOKENS),
  fc.string({ maxLength: 8 }).map((t) => enc.encode(t)),
)
const chunk = fc.oneof(
  { weight: 12, arbitrary: token },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      new Uint8Array([0xe4, 0xbd]), // a 3-byte character cut short
      new Uint8Array([0xf0, 0x9f, 0x8e]), // a 4-byte one cut short
      new Uint8Array([0xff, 0xfe]), // never valid
      new Uint8Array([0xc0, 0x80]), // overlong NUL
      new Uint8Array([0xed, 0xa0, 0x80]), // a UTF-16 surrogate in UTF-8
      new Uint8Array([0x80]), // a lone continuation byte
    ),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 8 }) },
)
const LONG_LINE = enc.encode(`data: ${'x'.repeat(100_000)}\n\n`)
const stream = fc
  .tuple(
    fc.array(chunk, { maxLength: 24 }),
    // About one stream in 50 (~200 of 10,000: fast-check draws 0 more
    // often than one in 250) carries a 100 kB line: decoding
    // one costs ~1 ms a pass against ~10 µs for the rest.
    fc.nat(249).map((n) => n === 0),
  )
  .map(([parts, longLine]) => {
    // The parts end to end in one new array: one allocation, no pooled Buffer to copy out of.
    let length = longLine ? LONG_LINE.length : 0
    for (const part of parts) length += part.length
    const bytes = new Uint8Array(length)
    let at = 0
    for (const part of parts) {
      bytes.set(part, at)
      at += part.length
    }
    if (longLine) bytes.set(LONG_LINE, at)
    return bytes
  })
const cuts = fc.oneof(
  fc.constant('bytes' as const),
  fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }),
)

function split(bytes: Uint8Array, how: 'bytes' | number[]): Uint8Array[] {
  if (how === 'bytes') {
    if (bytes.length > 400) return [bytes]
    // One-byte views, not copies: the decoder reads each chunk as it is pushed.
    const out: Uint8Array[] = new Array(bytes.length)
    for (let i = 0; i < bytes.length; i++) out[i] = bytes.subarray(i, i + 1)
    return out
  }
  const points = [...new Set(how.map((f) => Math.floor(f * bytes.length)))].sort((a, b) => a - b)
  const out: Uint8Array[] = []
  let at = 0
  for (const p of [...points, bytes.length]) {
    out.push(bytes.subarray(at, p))
    at = p
  }
  return out
}

type Decoded = { frames: SseFrame[] } | { overflow: true }

/**
 * Decodes with stack capture off: eventsource-parser builds a `ParseError` (an
 * Error, so a captured stack) for every unknown field and bad `retry:`, which
 * the decoder ignores, and those stacks nobody reads were a tenth of the file's
 * CPU. An unexpected error is thrown again from a second decode of the same
 * bytes, with its stack.
 */
function decode(chunks: readonly Uint8Array[], maxBufferChars?: number): Decoded {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return decodeOnce(chunks, maxBufferChars)
  } catch (error) {
    Error.stackTraceLimit = limit
    decodeOnce(chunks, maxBufferChars)
    throw error
  } finally {
    Error.stackTraceLimit = limit
  }
}

function decodeOnce(chunks: readonly Uint8Array[], maxBufferChars?: number): Decoded {
  const decoder = new SseDecoder(maxBufferChars === undefined ? {} : { maxBufferChars })
  try {
    const frames: SseFrame[] = []
    for (const c of chunks) for (const frame of decoder.push(c)) frames.push(frame)
    for (const frame of decoder.end()) frames.push(frame)
    return { frames }
  } catch (error) {
    if (isSseBufferOverflow(error)) return { overflow: true }
    throw error
  }
}

/**
 * The same frames, field for field: each frame's own keys and their values.
 * As strict as comparing their JSON (stricter: a key present but undefined
 * counts), without stringifying both lists for each of the streams.
 */
function sameFrames(a: readonly SseFrame[], b: readonly SseFrame[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as unknown as Record<string, unknown>
    const y = b[i] as unknown as Record<string, unknown>
    const keys = Object.keys(x)
    if (keys.length !== Object.keys(y).length) return false
    for (const key of keys) if (!Object.hasOwn(y, key) || x[key] !== y[key]) return false
  }
  return true
}

function wellFormed(frame: SseFrame): boolean {
  if (frame.type === 'comment') return typeof frame.comment === 'string'
  return (
    frame.type === 'event' &&
    typeof frame.data === 'string' &&
    (frame.event === undefined || typeof frame.event === 'string') &&
    (frame.id === undefined || typeof frame.id === 'string')
  )
}

/**
 * What a fatal TextDecoder accepts (the same WHATWG rules: no overlong forms,
 * surrogates or code points past U+10FFFF), without throwing: the TypeError a
 * fatal decoder throws for each invalid stream was 8 % of the file's time.
 */
function isValidUtf8(bytes: Uint8Array): boolean {
  return isUtf8(bytes)
}

describe('SSE decoder fuzz: hostile streams', () => {
  it(`${RUNS.toLocaleString('en-US')} hostile streams: the same well-formed frames however cut, no U+FFFD from valid UTF-8, only the typed overflow error`, () => {
    let cases = 0
    const drawn = new Set<string>()
    fc.assert(
      fc.property(stream, cuts, (bytes, how) => {
        cases++
        const whole = decode([bytes])
        const cut = decode(split(bytes, how))
        if ('overflow' in whole || 'overflow' in cut) return false // 8 M chars by default: never here
        if (!sameFrames(whole.frames, cut.frames)) return false
        if (!whole.frames.every(wellFormed)) return false
        drawn.add(bytes.length >= LONG_LINE.length ? 'long line' : 'short lines')
        drawn.add(how === 'bytes' ? 'cut bytes' : 'cut points')
        for (const f of whole.frames) drawn.add(f.type)
        const valid = isValidUtf8(bytes)
        drawn.add(valid ? 'valid utf-8' : 'invalid utf-8')
        if (valid) {
          return whole.frames.every((f) =>
            f.type === 'comment' ? !f.comment.includes('\uFFFD') : !f.data.includes('\uFFFD'),
          )
        }
        return true
      }),
      { numRuns: RUNS },
    )
    expect(cases).toBe(RUNS)
    // The count is small enough only because every kind of stream is still drawn.
    if (RUNS >= 10_000) {
      expect([...drawn].sort()).toEqual(
        [
          'comment',
          'cut bytes',
          'cut points',
          'event',
          'invalid utf-8',
          'long line',
          'short lines',
          'valid utf-8',
        ].sort(),
      )
    }
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false)
  }, 120_000)

  it('a small buffer cap turns a long line into the typed overflow error, never a crash', () => {
    let overflows = 0
    fc.assert(
      fc.property(stream, cuts, fc.constantFrom(0, 8, 64), (bytes, how, cap) => {
        const result = decode(split(bytes, how), cap)
        if ('overflow' in result) overflows++
        return true
      }),
      { numRuns: 5_000 },
    )
    expect(overflows).toBeGreaterThan(0)
  }, 60_000)
})

describe('SSE decoder: a CR line ending at a chunk boundary', () => {
  // Found by the fuzz above. eventsource-parser 3.1 keeps a chunk's final CR
  // pending, and a following chunk with no line ending at all is only
  // appended to it; SseDecoder.end() flushes only when the *last* text ends
  // with CR, so a complete event before such a tail is never dispatched.
  it('dispatches a complete event whose blank line (CR) ended one chunk, when the stream then ends mid-line', () => {
    const decoder = new SseDecoder()
    const frames = [
      ...decoder.push(enc.encode('data: x\r\r')),
      ...decoder.push(enc.encode('data: y')),
      ...decoder.end(),
    ]
    expect(frames).toEqual([{ type: 'event', event: undefined, id: undefined, data: 'x' }])
  })
})
