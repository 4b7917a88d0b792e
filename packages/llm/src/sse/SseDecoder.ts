import { refuseUnknownOptions } from '@hourglass/core'
import { createParser, type EventSourceParser } from 'eventsource-parser'
import { SseBufferOverflowError } from '../errors/SseBufferOverflowError.js'
import { nonNegative } from '../retry/checkNumber.js'
import type { SseFrame } from './SseFrame.js'

export interface SseDecoderOptions {
  /**
   * Most characters held while an event is incomplete (a partial line plus the
   * event's data so far). Past it, `push` throws `SseBufferOverflowError` and
   * the decoder stays failed. Default 8 MiB of characters; 0 (or Infinity)
   * means unlimited. NaN, a negative number or no number is refused
   * (`RangeError`, `TypeError`).
   */
  maxBufferChars?: number | undefined
}

const DEFAULT_MAX_BUFFER_CHARS = 8 * 1024 * 1024

/** Every option the decoder reads (the type checker keeps the list whole). */
const OPTION_NAMES = Object.keys({ maxBufferChars: true } satisfies Record<
  keyof SseDecoderOptions,
  true
>)

/** eventsource-parser's name for the bound, which the decoder wraps: said as the one meant. */
const MEANT: ReadonlyMap<string, string> = new Map([['maxBufferSize', 'maxBufferChars']])
const CR_OR_CRLF = /\r\n?/g

/**
 * Bytes in, whole SSE events and comments out, in stream order.
 *
 * One streaming `TextDecoder` per stream, so a character split across two
 * network chunks is joined rather than turned into two U+FFFD; parsing is
 * eventsource-parser's. Invalid UTF-8 becomes U+FFFD (never an exception):
 * the caller decides whether a garbled event matters. An event cut off by the
 * end of the stream is dropped, as the SSE spec says.
 */
export class SseDecoder {
  readonly #decoder = new TextDecoder('utf-8')
  readonly #parser: EventSourceParser
  readonly #maxBufferChars: number
  #out: SseFrame[] = []
  #failure: SseBufferOverflowError | undefined
  #ended = false
  /** The last chunk ended in CR, which ended its line: an LF now is the rest of that CRLF. */
  #afterCr = false

  constructor(options: SseDecoderOptions = {}) {
    // Ignored, `maxBufferSize` (eventsource-parser's own name for the bound)
    // left the 8 MiB default in force while the caller believed the stream
    // bounded; options that were no object failed reading them (null) or
    // were read as none (a number).
    refuseUnknownOptions(options, OPTION_NAMES, 'SseDecoder', { meant: MEANT })
    // A NaN or a negative bound read as 0 — none — and a string went to the
    // parser as it was: the bound a caller set was silently off. Refused,
    // naming it; null is the default, as undefined.
    const given = options.maxBufferChars
    if (given !== null) nonNegative('SseDecoder', 'maxBufferChars', given)
    const max = given ?? DEFAULT_MAX_BUFFER_CHARS
    this.#maxBufferChars = max
    this.#parser = createParser({
      onEvent: (message) => {
        this.#out.push({ type: 'event', event: message.event, data: message.data, id: message.id })
      },
      onComment: (comment) => {
        this.#out.push({ type: 'comment', comment })
      },
      onError: (error) => {
        // Unknown fields and bad `retry:` values are ignored, as browsers do;
        // only an overflow is fatal.
        if (error.type === 'max-buffer-size-exceeded') {
          this.#failure = new SseBufferOverflowError(max, 'chars', { cause: error })
        }
      },
      ...(max > 0 ? { maxBufferSize: max } : {}),
    })
  }

  /** Feeds one network chunk; returns the frames it completed. */
  push(chunk: Uint8Array): SseFrame[] {
    this.#assertUsable()
    return this.#feed(this.#decoder.decode(chunk, { stream: true }))
  }

  /** Ends the stream: flushes the decoder and returns any last frames. Idempotent. */
  end(): SseFrame[] {
    if (this.#ended) return []
    this.#assertUsable()
    this.#ended = true
    return this.#feed(this.#decoder.decode())
  }

  /** The cap in characters (0 = unlimited), for diagnostics. */
  get maxBufferChars(): number {
    return this.#maxBufferChars
  }

  /**
   * SSE allows CRLF, LF and a lone CR as line endings, and a CR always ends a
   * line (no field may contain one). eventsource-parser holds a chunk's final
   * CR back and, when the next chunk has no line ending at all, never
   * dispatches the event that CR completed. So line endings are normalised to
   * LF here, a chunk's final CR at once (holding it until the next chunk said
   * whether an LF follows held a CR-terminated event, `data: x\r\r`, until the
   * provider's next one): an LF that opens the next chunk is then the rest of
   * that CRLF, one line ending, and dropped.
   */
  #feed(decoded: string): SseFrame[] {
    let text = decoded
    if (this.#afterCr && text !== '') {
      this.#afterCr = false
      if (text.startsWith('\n')) text = text.slice(1)
    }
    if (text === '') return []
    this.#afterCr = text.endsWith('\r')
    this.#parser.feed(text.replace(CR_OR_CRLF, '\n'))
    const out = this.#out
    this.#out = []
    if (this.#failure) throw this.#failure
    return out
  }

  #assertUsable(): void {
    if (this.#failure) throw this.#failure
  }
}

/** A fetch/undici body (web `ReadableStream`, async-iterable on Node ≥ 20) or any async iterable of bytes. */
export type SseByteSource = AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>

/**
 * Decodes a whole byte stream into frames. Stops at the first overflow with
 * `SseBufferOverflowError`. Breaking out of the loop cancels the body.
 */
export async function* decodeSse(
  body: SseByteSource,
  options: SseDecoderOptions = {},
): AsyncGenerator<SseFrame, void, undefined> {
  const decoder = new SseDecoder(options)
  for await (const chunk of body as AsyncIterable<Uint8Array>) yield* decoder.push(chunk)
  yield* decoder.end()
}
