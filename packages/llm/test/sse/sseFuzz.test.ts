import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  cuts,
  decodeFrames,
  garbage,
  serialize,
  split,
  stream,
} from '../../../../test/support/sseStreams.js'
import { isSseBufferOverflow } from '../../src/errors/SseBufferOverflowError.js'
import { SseDecoder } from '../../src/sse/SseDecoder.js'

/**
 * Property tests over random multi-byte SSE streams and random re-chunking:
 * 15,000 + 5,000 cases (the decoder's 100,000 hostile streams are
 * test/fuzz/sseDecoder.fuzz.test.ts). Streams are kept small so the whole file
 * runs in seconds; the cuts are what is being explored. The re-cutter's
 * half lives in the gateway (test/sse/sseRecutterFuzz.test.ts).
 */

describe('SSE fuzz', () => {
  it('the decoder yields the same frames, text byte-identical, however the bytes are cut', () => {
    fc.assert(
      fc.property(stream, cuts, (s, how) => {
        const { bytes, frames } = serialize(s)
        const got = decodeFrames(split(bytes, how))
        // `expect` only when the plain check fails (it then reports the
        // difference): its ~10 µs a call was a third of the file's time.
        if (!isDeepStrictEqual(got, frames)) expect(got).toEqual(frames)
        for (const f of got) {
          if (f.type === 'event' && f.data.includes('\uFFFD'))
            expect(f.data).not.toContain('\uFFFD')
        }
      }),
      { numRuns: 15_000 },
    )
  }, 90_000)

  it('invalid UTF-8 and odd bytes never throw anything but the typed overflow error', () => {
    fc.assert(
      fc.property(garbage, fc.constantFrom(0, 16, 256), (chunks, cap) => {
        const d = new SseDecoder({ maxBufferChars: cap })
        try {
          for (const c of chunks) d.push(c)
          d.end()
        } catch (error) {
          if (!isSseBufferOverflow(error)) throw error
        }
      }),
      { numRuns: 5_000 },
    )
  }, 90_000)

  it('a huge stream without a blank line stops with the typed overflow error, not an out-of-memory', () => {
    const huge = new Uint8Array(9 * 1024 * 1024).fill(0x61)
    expect(() => new SseDecoder().push(huge)).toThrow(
      expect.objectContaining({ code: 'SSE_BUFFER_OVERFLOW' }),
    )
  })
})
