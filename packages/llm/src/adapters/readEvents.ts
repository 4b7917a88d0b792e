import { isDeadlineExceeded, outcomeWithin, systemClock } from '@hourglass/core'
import type { Dialect } from '../dialects/Dialect.js'
import { ProviderError } from '../errors/ProviderError.js'
import {
  isMalformedReply,
  isProviderReplyError,
  type ProviderReplyError,
} from '../errors/ProviderReplyError.js'
import { ResponseTooLargeError } from '../errors/ResponseTooLargeError.js'
import { SseDecoder } from '../sse/SseDecoder.js'
import type { StreamEvent } from '../types.js'
import { classifyThrown } from './classifyTransport.js'
import type { SendOptions } from './ModelAdapter.js'

/**
 * How long the rest of a body may take to end after the provider's end
 * marker before its connection is closed, in ms, on the call's clock (its
 * deadline's). What normally follows is only the end of the chunked
 * encoding, sent right behind the marker.
 */
export const END_GRACE_MS = 1000

/** What `readEvents` reads: the response body (undici's is a Readable). */
export interface EventBody extends AsyncIterable<Uint8Array> {
  destroy(): unknown
}

/**
 * SSE bytes → normalised events; comments (`: keep-alive`) are dropped here,
 * never counted as progress. The stream ends at the dialect's end marker
 * (`[DONE]`, `message_stop`, Gemini's chunk with a `finishReason`), not when
 * the body closes: a server or proxy that keeps the response open after it
 * would otherwise hold a whole answer until the body timeout or the
 * deadline, and end it as a failure. What follows the marker is ignored.
 * A transport failure while reading (a cut, the body timeout) or a body that
 * ends before the marker and before the answer's `finish` is a
 * `ProviderError` with status 200 that is not retryable: the provider had
 * the request and had started generating it — unless no event came at all
 * (an empty body, comments only): that is the empty body it amounts to, no
 * answer, ended without a throw for the caller to refuse (as `[DONE]`
 * alone). A body that ends after the
 * `finish` (the marker missing, or cut off with its blank line) is a whole
 * answer; so is a transport cut while the parser holds the `finish` back
 * (its stop reason came, its usage or end marker not yet). An event that cannot be read (not the dialect's JSON: a proxy that
 * garbled it) is the same case as a cut, not a reason to ask again.
 *
 * The body is read up to `limitBytes` in all (the adapter's
 * `maxStreamBytes`), comments included: each event is bounded by the
 * decoder, but without a total a provider or proxy that streams forever (or
 * 10 GB of small events) was read to the end. The events within the first
 * `limitBytes` are delivered (an end marker among them ends the stream as
 * usual); then the body is destroyed (its connection closed), and the
 * stream fails as a whole answer past the limit does: a `server_error`
 * `ProviderError`, not retryable, whose `cause` is a `ResponseTooLargeError`.
 */
export async function* readEvents(
  body: EventBody,
  dialect: Pick<Dialect, 'createStreamParser'>,
  send: SendOptions,
  context: Parameters<typeof classifyThrown>[1],
  limitBytes: number,
  whole?: WholeBody,
): AsyncGenerator<StreamEvent, void, undefined> {
  // A body whose first character (past whitespace and a BOM) opens JSON is
  // no SSE — no SSE line starts with `{` or `[`, and the decoder ignores such
  // a line as an unknown field —: a whole answer, or an error object, sent
  // under a stream's Content-Type. Held (up to `whole.limitBytes`) and read
  // whole, as the same body labelled `application/json` is; fed to the
  // decoder it was dropped, and the call asked again: "no answer".
  let firstSeen = false
  // How much of a UTF-8 byte order mark the body started with (3: all, or none to come).
  let bomMatched = 0
  let held: Uint8Array[] | undefined
  let heldBytes = 0
  const decoder = new SseDecoder()
  const parser = dialect.createStreamParser()
  const chunks = body[Symbol.asyncIterator]()
  let marked = false
  // A `finish` was delivered: the answer is whole (its stop reason came).
  let finished = false
  // An event came (comments are none): a body that ends with none in it is
  // the empty body it amounts to — no answer, for the caller to refuse —
  // not a stream cut before its end marker.
  let sawEvent = false
  let readBytes = 0
  const clock = send.deadline?.clock ?? systemClock
  // While the parser holds a finish back (its stop reason came; usage or the
  // end marker did not): when that began, on the call's clock, and the read
  // left pending when the grace ran out (the body is destroyed under it).
  let finishingSince: number | undefined
  let abandoned: Promise<unknown> | undefined
  const nextChunk = (): Promise<IteratorResult<Uint8Array> | typeof GRACE_OVER> => {
    if (!parser.finishing) {
      finishingSince = undefined
      return chunks.next()
    }
    finishingSince ??= clock.now()
    const read = chunks.next()
    const leftMs = finishingSince + END_GRACE_MS - clock.now()
    if (leftMs <= 0) {
      abandoned = read
      return Promise.resolve(GRACE_OVER)
    }
    // Core's outcomeWithin: a timer on the clock that keeps the process up
    // while awaited, released the moment the read settles, a read that
    // failed inside the grace rethrown.
    return outcomeWithin(read, leftMs, { clock }).then((settled) => {
      if (settled === undefined) {
        abandoned = read
        return GRACE_OVER
      }
      if (!settled.ok) throw settled.error
      return settled.value
    })
  }
  try {
    for (let next = await nextChunk(); ; next = await nextChunk()) {
      if (next === GRACE_OVER) {
        // The answer's stop reason came END_GRACE_MS ago and the body has
        // said nothing since (no usage chunk, no `[DONE]`, no
        // `message_stop`, no end): the answer is whole; its held-back
        // `finish` (without usage, then: charged by estimate) ends it.
        for (const event of parser.end()) {
          if (event.type === 'finish') finished = true
          yield event
        }
        return
      }
      if (next.done) {
        if (held !== undefined && whole !== undefined) {
          yield* whole.answer(new TextDecoder().decode(Buffer.concat(held)))
          return
        }
        break
      }
      let chunk = next.value
      if (!firstSeen && whole !== undefined) {
        // A BOM's bytes skipped as they come, a chunk cut inside it too.
        let from = 0
        while (bomMatched < 3 && from < chunk.length && chunk[from] === UTF8_BOM[bomMatched]) {
          bomMatched++
          from++
        }
        if (from < chunk.length) bomMatched = 3
        const at = firstNonBlank(chunk, from)
        if (at !== -1) {
          firstSeen = true
          if (chunk[at] === 0x7b || chunk[at] === 0x5b) {
            held = []
            // From the JSON's first byte: what came before is blank, or the
            // rest of a BOM cut across chunks (decoded, its last byte alone
            // was a U+FFFD before the JSON).
            chunk = chunk.subarray(at)
          }
        }
      }
      if (held !== undefined && whole !== undefined) {
        held.push(chunk)
        heldBytes += chunk.byteLength
        if (heldBytes > whole.limitBytes) throw whole.tooLarge(heldBytes)
        continue
      }
      readBytes += chunk.byteLength
      // The chunk that goes past the limit is decoded up to it: what is
      // delivered does not depend on how the network cut the bytes.
      const over = readBytes > limitBytes
      if (over) chunk = chunk.subarray(0, chunk.byteLength - (readBytes - limitBytes))
      for (const frame of decoder.push(chunk)) {
        if (frame.type !== 'event') continue
        sawEvent = true
        for (const event of parser.parseStreamEvent(frame)) {
          if (event.type === 'finish') finished = true
          // More answer after the stop reason: that was no end yet, so the
          // grace starts again from here.
          else finishingSince = undefined
          yield event
        }
        if (parser.done) {
          marked = true
          break
        }
      }
      if (marked) break
      if (over) throw tooLarge(context, limitBytes, readBytes)
    }
    if (!marked) {
      for (const frame of decoder.end()) {
        if (frame.type !== 'event') continue
        sawEvent = true
        for (const event of parser.parseStreamEvent(frame)) {
          if (event.type === 'finish') finished = true
          yield event
        }
      }
    }
    for (const event of parser.end()) {
      if (event.type === 'finish') finished = true
      yield event
    }
    // A body that closes after the answer's finish (its stop reason, and
    // usage) but before the end marker — no `[DONE]`, or a last
    // `data: [DONE]` / `message_stop` without its blank line, which SSE
    // drops — lost nothing: the stream is done. Failing it would make the
    // outcome depend on whether the reader stopped at `finish` first.
    if (!parser.done && !finished && sawEvent) {
      throw new ProviderError({
        provider: context.provider,
        model: context.model,
        error: {
          kind: 'network',
          retryable: false,
          status: 200,
          message:
            'the 200 stream ended before the provider’s end marker; not resent to this model: the provider had started the generation, and may bill it',
        },
        requestId: context.requestId,
      })
    }
  } catch (thrown) {
    // After the 200: a cut is not resent to this model, before the first
    // token too (the generation had started; it may be billed). An error
    // frame is the provider's own verdict and keeps its retryability; an
    // event that cannot be read is no verdict, but bytes lost on the way.
    const failure = isMalformedReply(thrown) ? unreadable(context, thrown) : thrown
    const verdict = classifyThrown(failure, { ...context, signal: send.signal }, 200, true)
    // The deadline reached while the parser holds the finish back (within
    // END_GRACE_MS of the stop reason, its usage or end marker not come)
    // ended an answer that was whole: its finish goes out, as after a cut
    // below and as a deadline after a delivered finish is (`streamAttempt`).
    // Rethrown, the stop reason lost the answer to the deadline, which a
    // usage chunk sent in time would have saved. A stop on `send.signal`
    // (the caller's, a timer of the attempt's) still passes through.
    // Only when the deadline's expiry is what ended the read (the verdict
    // rethrows its reason): not a provider's error frame read after the stop
    // reason while the clock was past an observed deadline, nor a cancel.
    const ended = send.deadline?.done === true ? send.deadline.reason : undefined
    if (
      parser.finishing === true &&
      !finished &&
      !send.signal.aborted &&
      isDeadlineExceeded(ended) &&
      'rethrow' in verdict &&
      verdict.rethrow === ended
    ) {
      for (const event of parser.end()) yield event
      return
    }
    if ('rethrow' in verdict) throw verdict.rethrow
    // A connection cut while the parser holds the finish back (its stop
    // reason came: Anthropic's `message_delta`, OpenAI's `finish_reason`;
    // `message_stop`, the usage chunk or `[DONE]` did not) lost only
    // bookkeeping: the answer is whole, as when the body ends or goes quiet
    // there. Failed, a whole answer reached the caller as a broken stream,
    // charged and not asked again. A provider's error frame, an unreadable
    // event or a body past its limit are no such cut, and still fail.
    if (parser.finishing === true && !finished && isTransportCut(thrown)) {
      for (const event of parser.end()) yield event
      return
    }
    throw verdict.error
  } finally {
    // As `for await` would: a stream left early (an error, the reader
    // stopped) destroys the body, and with it the connection. One whose
    // grace ran out has waited enough: destroyed at once, the read still
    // pending on it settled and ignored.
    if (abandoned !== undefined) {
      abandoned.catch(noop)
      body.destroy()
    } else if (marked) release(chunks, body, send)
    else await chunks.return?.()
  }
}

/**
 * How `readEvents` reads a body that turns out to be JSON, not SSE: bounded
 * by `limitBytes` (past it, `tooLarge`), then `answer(text)` — the events of
 * the whole answer, or throws its failure (a `ProviderError`, kept as it is).
 */
export interface WholeBody {
  limitBytes: number
  tooLarge(readBytes: number): ProviderError
  answer(text: string): AsyncIterable<StreamEvent>
}

const UTF8_BOM = [0xef, 0xbb, 0xbf] as const

/** Index of the first byte from `from` on that is not JSON whitespace; -1 when none. */
function firstNonBlank(chunk: Uint8Array, from: number): number {
  for (let i = from; i < chunk.length; i++) {
    const c = chunk[i]
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i
  }
  return -1
}

/** A failure of the connection itself, not an answer the dialect or the byte limit judged. */
function isTransportCut(thrown: unknown): boolean {
  return (
    !(thrown instanceof ProviderError) && !isProviderReplyError(thrown) && !isMalformedReply(thrown)
  )
}

/** What `nextChunk` answers when the grace after a held-back finish ran out. */
const GRACE_OVER = Symbol('grace over')

function noop(): void {}

/**
 * An event of the 200 stream that is not the dialect's JSON (a proxy that
 * garbled or re-framed it). Resending it to the same model would start, and
 * pay for, the same generation again, as for a cut: not retryable, a
 * fallback may answer; charged as a stream cut (`billedBy`).
 */
function unreadable(
  context: Parameters<typeof classifyThrown>[1],
  thrown: ProviderReplyError,
): ProviderError {
  return new ProviderError({
    provider: context.provider,
    model: context.model,
    error: {
      kind: 'server_error',
      retryable: false,
      status: 200,
      message: `the 200 stream could not be read (${thrown.error.message}); not resent to this model: the provider had started the generation, and may bill it`,
    },
    cause: thrown,
    requestId: context.requestId,
  })
}

/**
 * A stream past `limitBytes`: the provider had taken the request and was
 * generating — and billing — it, so it is not resent to this model (asking
 * again would pay for the same runaway answer); a fallback may answer.
 */
function tooLarge(
  context: Parameters<typeof classifyThrown>[1],
  limitBytes: number,
  readBytes: number,
): ProviderError {
  const { provider, model } = context
  return new ProviderError({
    provider,
    model,
    error: {
      kind: 'server_error',
      retryable: false,
      status: 200,
      message: `the 200 stream is larger than maxStreamBytes (${limitBytes} bytes in all); not read further, and not resent to this model: the provider had started the generation, and may bill it`,
    },
    cause: new ResponseTooLargeError({
      provider,
      model,
      status: 200,
      limitBytes,
      option: 'maxStreamBytes',
      readBytes,
    }),
    requestId: context.requestId,
  })
}

/**
 * After the end marker: reads what is left of the body in the background, so
 * that a connection whose body ends right away goes back to the pool; one
 * still open after `END_GRACE_MS` is destroyed rather than left reading
 * until the body timeout. The grace runs on the call's clock, as its other
 * timers do, so a `ManualClock` drives it too.
 */
function release(chunks: AsyncIterator<Uint8Array>, body: EventBody, send: SendOptions): void {
  const clock = send.deadline?.clock ?? systemClock
  const timer = clock.setTimeout(() => body.destroy(), END_GRACE_MS)
  const drain = async () => {
    try {
      while (!(await chunks.next()).done) {
        // discarded: the answer is complete
      }
    } catch {
      // destroyed, reset or timed out: the connection is gone either way
    } finally {
      clock.clearTimeout(timer)
    }
  }
  void drain()
}
