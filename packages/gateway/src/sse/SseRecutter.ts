import { SseBufferOverflowError } from '@hourglass/llm'
import { optionError } from '../optionError.js'
import { completeUtf8Length } from './utf8.js'

export interface SseRecutterOptions {
  /**
   * Most bytes held for one unfinished event. Past it, `push` throws
   * `SseBufferOverflowError` (forwarding half an event would break the
   * whole-event promise) — or, when the same chunk completed events before
   * it, returns those, and the next `push` or `end` throws. Default 4 MiB;
   * 0 (or Infinity) means unlimited. NaN, a negative number or no number is
   * refused (`RangeError`, `TypeError`; `code: 'GATEWAY_OPTION_INVALID'`).
   */
  maxEventBytes?: number | undefined
}

const DEFAULT_MAX_EVENT_BYTES = 4 * 1024 * 1024
const CR = 0x0d
const LF = 0x0a

/**
 * Re-cuts an SSE byte stream so that every chunk it emits ends at the end of
 * a whole event (a blank line, with `\r\n`, `\r` or `\n` endings). Because
 * `\r` and `\n` never occur inside a multi-byte UTF-8 sequence, an event
 * boundary is always a character boundary too: a client that decodes each
 * chunk on its own (many do) never sees U+FFFD from a split character.
 *
 * The bytes are forwarded unchanged, except a leading BOM, which is dropped so
 * that a proxy can splice its own frames in front without corrupting the
 * first field name. Written here rather than taken from eventsource-parser
 * because that works on decoded text; a proxy has to forward the original
 * bytes. Each byte is scanned once; chunks are joined only when emitted.
 */
export class SseRecutter {
  readonly #maxEventBytes: number
  #chunks: Uint8Array[] = []
  #length = 0
  /** Offset (in the held bytes) just past the last complete event. */
  #boundary = 0
  /** The last byte ended a line, so another terminator now is a blank line. */
  #atLineStart = true
  /** The last byte was a CR, which ended its line: an LF now is the rest of that CRLF. */
  #afterCr = false
  #bomChecked = false
  #ended = false
  /** The held event passed the limit after `push` returned the events before it: the next call throws. */
  #overflowPending = false
  /** Bytes dropped at `end()` because the stream stopped inside a character. */
  droppedBytes = 0

  constructor(options: SseRecutterOptions = {}) {
    // NaN and a negative bound failed every `>` test: read as no limit, so a
    // bound computed from an unset variable held an endless event whole.
    // Refused, naming it, as @hourglass/llm's SseDecoder refuses its own.
    const given = options.maxEventBytes
    if (given != null && !(typeof given === 'number' && given >= 0)) {
      throw optionError('SseRecutter', 'maxEventBytes', 'a number ≥ 0', given)
    }
    this.#maxEventBytes = given ?? DEFAULT_MAX_EVENT_BYTES
  }

  /** Adds one chunk; returns the whole events it completed, as one chunk, or undefined. */
  push(chunk: Uint8Array): Uint8Array | undefined {
    if (this.#ended) throw new TypeError('SseRecutter.push() after end()')
    if (this.#overflowPending) {
      // Where the push that passed the limit would have left it, had it thrown;
      // the chunk held as any is, so `end()` after the error hands back every
      // byte on this path too.
      this.#overflowPending = false
      this.#scan(chunk, this.#length)
      this.#chunks.push(chunk)
      this.#length += chunk.length
      throw this.#overflowError()
    }
    if (chunk.length === 0) return undefined
    if (!this.#bomChecked) {
      const head = this.#stripBom(chunk, false)
      if (head === undefined) return undefined
      chunk = head
    }
    this.#scan(chunk, this.#length)
    this.#chunks.push(chunk)
    this.#length += chunk.length
    if (this.#maxEventBytes > 0 && this.#length - this.#boundary > this.#maxEventBytes) {
      // Events the chunk completed before the oversized one were whole: a
      // proxy writes what push returns, and thrown away with the error a
      // client lost answers it would have had. They go first. Line endings
      // alone (the LF of a CRLF whose CR ended the last event, a blank line)
      // complete none: the error is not put off for them, and they stay held,
      // so `end()` after the error still hands back every byte.
      if (this.#boundary === 0 || this.#onlyLineEnds(this.#boundary)) {
        throw this.#overflowError()
      }
      const out = this.#take(this.#boundary)
      this.#overflowPending = true
      return out
    }
    return this.#boundary > 0 ? this.#take(this.#boundary) : undefined
  }

  #overflowError(): SseBufferOverflowError {
    return new SseBufferOverflowError(this.#maxEventBytes, 'bytes')
  }

  /**
   * Ends the stream. Returns what is left (an unterminated last event, which
   * a conforming client discards anyway), cut back to the last whole
   * character so even a truncated upstream cannot produce U+FFFD. Idempotent.
   * Throws `SseBufferOverflowError` when the last `push` returned events
   * ahead of one past `maxEventBytes` (see that option).
   */
  end(): Uint8Array | undefined {
    if (this.#overflowPending) {
      // Ended: the oversized event is never returned.
      this.#overflowPending = false
      this.#ended = true
      throw this.#overflowError()
    }
    if (this.#ended) return undefined
    this.#ended = true
    if (!this.#bomChecked) {
      const head = this.#stripBom(new Uint8Array(0), true) ?? new Uint8Array(0)
      this.#chunks = [head]
      this.#length = head.length
    }
    const rest = this.#take(this.#length)
    // Repeat: cutting an unfinished character can expose an invalid lead byte
    // before it (C2 C2), which a client would again hold and then replace.
    let whole = rest.length
    for (let next = completeUtf8Length(rest); next < whole; ) {
      whole = next
      next = completeUtf8Length(rest.subarray(0, whole))
    }
    this.droppedBytes = rest.length - whole
    return whole > 0 ? rest.subarray(0, whole) : undefined
  }

  /**
   * Holds the first bytes until it is known whether they start with a BOM.
   * Returns the bytes to scan, or undefined while undecided.
   */
  #stripBom(chunk: Uint8Array, final: boolean): Uint8Array | undefined {
    const head = join(this.#chunks, this.#length, chunk)
    this.#chunks = []
    this.#length = 0
    const isPrefix = head.length < 3 && head.every((b, i) => b === [0xef, 0xbb, 0xbf][i])
    if (isPrefix && !final) {
      this.#chunks = [head]
      this.#length = head.length
      return undefined
    }
    this.#bomChecked = true
    const hasBom = head.length >= 3 && head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf
    return hasBom ? head.subarray(3) : isPrefix ? new Uint8Array(0) : head
  }

  #scan(chunk: Uint8Array, offset: number): void {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!
      if (this.#afterCr) {
        this.#afterCr = false
        if (byte === LF) {
          // The line ended at the CR. An LF right after the cut of the event
          // that CR ended goes out with what is complete: in a later chunk
          // alone (a blank line to a client's parser, which it skips), never
          // held as the next event's first byte, counted against its limit.
          if (this.#boundary === offset + i) this.#boundary++
          continue
        }
      }
      // A CR ends its line whatever follows: waiting for the next byte to
      // rule out CRLF held a CR-terminated event (`data: x\r\r`) until the
      // provider's next event, the last one until the stream's end.
      if (byte === CR) {
        this.#terminator(offset + i + 1)
        this.#afterCr = true
      } else if (byte === LF) this.#terminator(offset + i + 1)
      else this.#atLineStart = false
    }
  }

  #terminator(end: number): void {
    if (this.#atLineStart) this.#boundary = end
    this.#atLineStart = true
  }

  /** The first `cut` held bytes are CRs and LFs only. */
  #onlyLineEnds(cut: number): boolean {
    let seen = 0
    for (const c of this.#chunks) {
      for (let i = 0; i < c.length && seen < cut; i++, seen++) {
        if (c[i] !== CR && c[i] !== LF) return false
      }
      if (seen >= cut) break
    }
    return true
  }

  #take(cut: number): Uint8Array {
    const all = join(this.#chunks, this.#length, undefined)
    this.#chunks = cut < all.length ? [all.subarray(cut)] : []
    this.#length = all.length - cut
    this.#boundary = 0
    return all.subarray(0, cut)
  }
}

function join(chunks: Uint8Array[], length: number, extra: Uint8Array | undefined): Uint8Array {
  if (extra === undefined && chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(length + (extra?.length ?? 0))
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  if (extra) out.set(extra, at)
  return out
}
