import { afterAll as __r5afterAll, expect as __r5expect } from 'vitest'
import { writeFileSync as __r5write } from 'node:fs'
const __r5out: any[] = []
class R5CountSet<T> extends Set<T> {
  counts = new Map<T, number>()
  label: string
  constructor() { super(); this.label = String(__r5expect.getState().currentTestName); __r5out.push(this) }
  add(x: T) { this.counts.set(x, (this.counts.get(x) ?? 0) + 1); return super.add(x) }
  clear() { if (this.counts.size) __r5out.push({ label: this.label + ' (cleared)', counts: new Map(this.counts) }); this.counts = new Map(); this.label = String(__r5expect.getState().currentTestName); super.clear() }
}
__r5afterAll(() => {
  const rows = __r5out.map((s) => ({ label: s.label, counts: Object.fromEntries([...s.counts].sort((a: any, b: any) => a[1] - b[1]).map(([k, v]: any) => [String(k), v])) }))
  __r5write(process.env.R5_OUT!, JSON.stringify(rows, null, 1))
})
import { isDeepStrictEqual } from 'node:util'
import { isSseBufferOverflow } from '@hourglass/llm'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { fuzzRuns } from '../../../../test/support/fuzzRuns.js'
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
 * for the re-cutter: 8,000 + 3,000 cases in `npm test` (45,000 + 10,000 until
 * session 50), 200,000 + 50,000 under `HOURGLASS_SOAK=long`, or
 * `HOURGLASS_FUZZ_RUNS` each. Each property asserts it drew every branch of
 * its generators (line ending, BOM, event and comment pieces, event names
 * and ids, 1- to 4-byte characters, both kinds of cut; every cap, and the
 * overflow), so the smaller count still reaches each. Streams are kept
 * small so the whole file runs in seconds; the cuts are what is being
 * explored. The decoder's half lives in @hourglass/llm
 * (test/sse/sseFuzz.test.ts).
 */
const RECUT_RUNS = fuzzRuns(8_000, 200_000)
const GARBAGE_RUNS = fuzzRuns(3_000, 50_000)

/** What a stream drew from each branch of `stream` and `cuts`. */
function branchesOf(s: Parameters<typeof serialize>[0], how: 'bytes' | number[]): string[] {
  const out = [
    `eol ${JSON.stringify(s.eol)}`,
    `bom ${s.bom}`,
    how === 'bytes' ? 'cut bytes' : 'cut points',
  ]
  for (const p of s.pieces) {
    out.push(p.kind)
    if (p.kind === 'comment') continue
    out.push(`event ${p.event}`, `id ${p.id !== undefined}`)
    for (const ch of p.lines.join('')) out.push(`char ${Buffer.byteLength(ch)} bytes`)
  }
  return out
}
const RECUT_BRANCHES = [
  'eol "\\n"',
  'eol "\\r\\n"',
  'eol "\\r"',
  'bom true',
  'bom false',
  'cut bytes',
  'cut points',
  'event',
  'comment',
  'event delta',
  'event message_start',
  'event error',
  'event undefined',
  'id true',
  'id false',
  'char 1 bytes',
  'char 2 bytes',
  'char 3 bytes',
  'char 4 bytes',
].sort()

describe('SSE re-cutter fuzz', () => {
  it('re-cut chunks are whole events and whole characters: decoding each alone gives zero U+FFFD and the original text', () => {
    const drawn = new R5CountSet<string>()
    fc.assert(
      fc.property(stream, cuts, (s, how) => {
        for (const b of branchesOf(s, how)) drawn.add(b)
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
      { numRuns: RECUT_RUNS },
    )
    if (RECUT_RUNS >= 8_000) expect([...drawn].sort()).toEqual(RECUT_BRANCHES)
  }, 90_000)

  it('invalid UTF-8 and odd bytes never throw anything but the typed overflow error', () => {
    const drawn = new R5CountSet<string>()
    fc.assert(
      fc.property(garbage, fc.constantFrom(0, 16, 256), (chunks, cap) => {
        const r = new SseRecutter({ maxEventBytes: cap })
        try {
          for (const c of chunks) r.push(c)
          r.end()
          drawn.add(`cap ${cap}`)
        } catch (error) {
          if (!isSseBufferOverflow(error)) throw error
          drawn.add(`cap ${cap} overflow`)
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
      { numRuns: GARBAGE_RUNS },
    )
    // Every cap read through, and the overflow reached (at 16 bytes: garbage
    // seldom passes 256 bytes without a blank line, not once in 10,000 cases;
    // 0 is no cap and never overflows).
    if (GARBAGE_RUNS >= 3_000) {
      expect([...drawn].sort()).toEqual(['cap 0', 'cap 16', 'cap 16 overflow', 'cap 256'])
    }
  }, 90_000)

  it('a huge stream without a blank line stops with the typed overflow error, not an out-of-memory', () => {
    const huge = new Uint8Array(9 * 1024 * 1024).fill(0x61)
    expect(() => new SseRecutter().push(huge)).toThrow(
      expect.objectContaining({ code: 'SSE_BUFFER_OVERFLOW' }),
    )
  })
})
