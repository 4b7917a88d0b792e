import { isDeepStrictEqual } from 'node:util'
import { isSseBufferOverflow } from '@hourglass/llm'
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
import { SseRecutter } from '../../src/sse/SseRecutter.js'

/**
 * Property tests over random multi-byte SSE streams and random re-chunking,
 * for the re-cutter: 45,000 + 10,000 = 55,000 cases. Streams are kept small
 * so the whole file runs in seconds; the cuts are what is being explored.
 * The decoder's half lives in @hourglass/llm (test/sse/sseFuzz.test.ts).
 */

describe('SSE re-cutter fuzz', () => {
  it('re-cut chunks are whole events and whole characters: decoding each alone gives zero U+FFFD and the original text', () => {
    fc.assert(
      fc.property(stream, cuts, (s, how) => {
        const { text, body, bytes, frames } = serialize(s)
        const r = new SseRecutter()
        const out: Uint8Array[] = []
        for (const chunk of split(bytes, how)) {
          const piece = r.push(chunk)
          if (piece) out.push(piece)
        }
        const last = r.end()
        if (last) out.push(last)
        // A naive client: a fresh, non-streaming, fatal decoder per chunk.
        const decoded = out.map((c) => new TextDecoder('utf-8', { fatal: true }).decode(c)).join('')
        // `expect` only when the plain check fails (it then reports the
        // difference): its ~10 µs a call was a third of the file's time.
        if (decoded !== text) expect(decoded).toBe(text)
        if (decoded.includes('\uFFFD')) expect(decoded).not.toContain('\uFFFD')
        const sent = Buffer.concat(out)
        if (!sent.equals(body)) expect(sent).toEqual(Buffer.from(body))
        // Whole events: every chunk parsed on its own yields only complete frames.
        const parsed = out.flatMap((c) => decodeFrames([c]))
        if (!isDeepStrictEqual(parsed, frames)) expect(parsed).toEqual(frames)
      }),
      { numRuns: 45_000 },
    )
  }, 90_000)

  it('invalid UTF-8 and odd bytes never throw anything but the typed overflow error', () => {
    fc.assert(
      fc.property(garbage, fc.constantFrom(0, 16, 256), (chunks, cap) => {
        const r = new SseRecutter({ maxEventBytes: cap })
        try {
          for (const c of chunks) r.push(c)
          r.end()
        } catch (error) {
          if (!isSseBufferOverflow(error)) throw error
        }
        // Whatever the input, the re-cutter's output never ends inside a character:
        // a streaming decoder has nothing pending when it is flushed.
        const r2 = new SseRecutter({ maxEventBytes: 0 })
        const out = [...chunks.map((c) => r2.push(c)), r2.end()].filter((c) => c !== undefined)
        const decoder = new TextDecoder()
        decoder.decode(Buffer.concat(out), { stream: true })
        const pending = decoder.decode()
        if (pending !== '') expect(pending).toBe('')
      }),
      { numRuns: 10_000 },
    )
  }, 90_000)

  it('a huge stream without a blank line stops with the typed overflow error, not an out-of-memory', () => {
    const huge = new Uint8Array(9 * 1024 * 1024).fill(0x61)
    expect(() => new SseRecutter().push(huge)).toThrow(
      expect.objectContaining({ code: 'SSE_BUFFER_OVERFLOW' }),
    )
  })
})
