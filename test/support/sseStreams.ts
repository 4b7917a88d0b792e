import { SseDecoder, type SseFrame } from '@hourglass/llm'
import fc from 'fast-check'

/**
 * Random multi-byte SSE streams, random ways to cut them, and the frames a
 * correct decoder must find: shared by llm's decoder fuzz
 * (packages/llm/test/sse/sseFuzz.test.ts) and the gateway's re-cutter fuzz
 * (packages/gateway/test/sse/sseRecutterFuzz.test.ts).
 */

// 1-, 2-, 3- and 4-byte characters, a skin-tone sequence and a colon.
const CHARS = ['a', 'Z', ' ', ':', 'é', 'ж', '你', '好', '世', '界', '€', '😀', '🎉', '👍🏽', '𝄞']
export const text = fc.array(fc.constantFrom(...CHARS), { maxLength: 10 }).map((a) => a.join(''))

export type Piece =
  | { kind: 'event'; event: string | undefined; id: string | undefined; lines: string[] }
  | { kind: 'comment'; text: string }

export const piece: fc.Arbitrary<Piece> = fc.oneof(
  fc.record({
    kind: fc.constant('event' as const),
    event: fc.option(fc.constantFrom('delta', 'message_start', 'error'), { nil: undefined }),
    id: fc.option(fc.constantFrom('1', '42'), { nil: undefined }),
    lines: fc.array(text, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({
    kind: fc.constant('comment' as const),
    text: fc.constantFrom('keep-alive', 'HTTP_STATUS/200', '心跳'),
  }),
)

export const stream = fc.record({
  pieces: fc.array(piece, { minLength: 1, maxLength: 5 }),
  eol: fc.constantFrom('\n', '\r\n', '\r'),
  bom: fc.boolean(),
})

/** Either 1-byte chunks or random cut points (as fractions of the length). */
export const cuts = fc.oneof(
  fc.constant('bytes' as const),
  fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 }),
)

export const enc = new TextEncoder()

export function serialize(s: { pieces: Piece[]; eol: string; bom: boolean }) {
  let out = ''
  const frames: SseFrame[] = []
  for (const p of s.pieces) {
    if (p.kind === 'comment') {
      out += `: ${p.text}${s.eol}${s.eol}`
      frames.push({ type: 'comment', comment: p.text })
      continue
    }
    if (p.event) out += `event: ${p.event}${s.eol}`
    if (p.id) out += `id: ${p.id}${s.eol}`
    for (const line of p.lines) out += `data: ${line}${s.eol}`
    out += s.eol
    frames.push({ type: 'event', event: p.event, id: p.id, data: p.lines.join('\n') })
  }
  const body = enc.encode(out)
  const bytes = s.bom ? new Uint8Array([0xef, 0xbb, 0xbf, ...body]) : body
  return { text: out, body, bytes, frames }
}

export function split(bytes: Uint8Array, how: 'bytes' | number[]): Uint8Array[] {
  if (how === 'bytes') return [...bytes].map((b) => new Uint8Array([b]))
  const points = [...new Set(how.map((f) => Math.floor(f * bytes.length)))].sort((a, b) => a - b)
  const out: Uint8Array[] = []
  let at = 0
  for (const p of [...points, bytes.length]) {
    out.push(bytes.subarray(at, p)) // empty chunks included on purpose
    at = p
  }
  return out
}

export function decodeFrames(chunks: readonly Uint8Array[]): SseFrame[] {
  const d = new SseDecoder()
  return [...chunks.flatMap((c) => d.push(c)), ...d.end()]
}

/** Invalid UTF-8 and odd bytes: random bytes, lone line ends, half a 4-byte character. */
export const garbage = fc.array(
  fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    fc.constantFrom(
      enc.encode('\r'),
      enc.encode('\n'),
      enc.encode('data:'),
      enc.encode(':'),
      new Uint8Array([0xf0, 0x9f]),
    ),
  ),
  { maxLength: 40 },
)
