import { type Clock, type Deadline, expiryError, systemClock, untilEnded } from '@hourglass/core'
import type { ModelAdapter, SendOptions, SendResult } from '../adapters/ModelAdapter.js'
import { END_GRACE_MS } from '../adapters/readEvents.js'
import { ProviderError } from '../errors/ProviderError.js'
import { malformedReply, ProviderReplyError } from '../errors/ProviderReplyError.js'
import { StreamInterruptedError } from '../errors/StreamInterruptedError.js'
import type { ChatRequest, Logprobs, StreamEvent, Usage } from '../types.js'
import type { StreamSink } from './ModelStream.js'
import { keepsRawArguments, StreamCollector } from './StreamCollector.js'

export interface StreamAttemptOptions {
  adapter: ModelAdapter
  request: ChatRequest
  send: SendOptions
  /** Aborts `send.signal`; used for the first-token timer. */
  abort: (reason: unknown) => void
  sink: StreamSink
  firstTokenTimeoutMs: number
  clock: Clock | undefined
  /**
   * Called once, when the stream commits at its first token (the provider is
   * answering): past it the stream is never restarted.
   */
  onFirstToken: () => void
  /**
   * Called once, at the first token's moment — the committing token, or an
   * Anthropic `redacted_thinking` block held before it, which stops the
   * first-token timer too (`firstTokenMs`). Not that the attempt succeeds:
   * an error frame right after a held block still fails it as one before
   * any token (its cooldown reported, its probe failed).
   */
  onFirstTokenTime?: (() => void) | undefined
  /** Filled in as the attempt goes, for the caller to read after it failed (the cost budget). */
  received?: StreamReceived | undefined
}

/** What a streaming attempt received before it ended. */
export interface StreamReceived {
  /** The stream's 2xx headers came: the provider took the request and started on it. */
  answered: boolean
  /** Their status (a 2xx), once they came: what the attempt record says, however the stream ends. */
  status?: number | undefined
  /** The events received. */
  readonly collector: StreamCollector
  /** The counts the provider sent before its `finish`, when the adapter reads them (`OpenResult.usageSoFar`). */
  usageSoFar?: (() => Usage | undefined) | undefined
  /** The provider's id of the answer once the stream named it, when the adapter reads it (`OpenResult.responseIdSoFar`). */
  responseIdSoFar?: (() => string | undefined) | undefined
  /** The service tier the stream said serves it, when the adapter reads it (`OpenResult.serviceTierSoFar`). */
  serviceTierSoFar?: (() => string | undefined) | undefined
  /** The tokens' log probabilities so far, when the adapter reads them (`OpenResult.logprobsSoFar`). */
  logprobsSoFar?: (() => Logprobs | undefined) | undefined
}

/**
 * One streaming attempt. Before the first token a failure is a normal
 * `SendResult` failure (retry or fall back, nothing reached the caller);
 * after it, any failure is a `StreamInterruptedError` with what arrived —
 * never a silent restart. Events before the first token are held back and
 * delivered with it, so an attempt that fails early leaves no trace.
 */
export async function streamAttempt(options: StreamAttemptOptions): Promise<SendResult> {
  const { adapter, sink } = options
  const received = options.received ?? {
    answered: false,
    collector: new StreamCollector(keepsRawArguments(adapter)),
  }
  const { collector } = received
  const held: StreamEvent[] = []
  let committed = false
  const clock = options.clock ?? systemClock
  const timeout = new FirstTokenTimeout(options.firstTokenTimeoutMs)
  const timer =
    options.firstTokenTimeoutMs > 0
      ? clock.setTimeout(() => options.abort(timeout), options.firstTokenTimeoutMs)
      : undefined
  const stopTimer = () => {
    if (timer !== undefined) clock.clearTimeout(timer)
  }
  // The first token's moment, once: the timer stops, `firstTokenMs` is taken.
  let tokenCame = false
  const firstToken = () => {
    if (tokenCame) return
    tokenCame = true
    stopTimer()
    options.onFirstTokenTime?.()
  }
  // The answer's `finish` came (OpenAI's, with its usage, comes before
  // `[DONE]`): a body silent and still open END_GRACE_MS later is not read on. A
  // server or proxy that sent the whole answer but neither `[DONE]` nor the
  // body's end held it until the deadline, which then failed it as
  // interrupted (a gateway's client got the finish, then an error event).
  const afterFinish = new AfterFinishGrace()
  let graceTimer: ReturnType<Clock['setTimeout']> | undefined
  let finished = false
  const stopGrace = () => {
    if (graceTimer !== undefined) clock.clearTimeout(graceTimer)
  }
  // The failure `whole` throws, passed on as it is by the catch below.
  let unreadableAnswer: StreamInterruptedError | undefined
  const whole = (status: number): SendResult => {
    const response = collector.response(adapter.name, adapter.model, providerRequestId)
    const unwritable = collector.unwritableToolCall
    if (unwritable !== undefined) {
      // A tool call whose arguments parsed too deep to be written again: an
      // answer that cannot be read, as the same answer whole is
      // (`createAdapter`): a server_error, not resent to this model. Its
      // tool-call events went out already, so the stream ends interrupted
      // (nothing is resent after a token), its arguments kept as text: as
      // an answer, the caller's next request threw a raw RangeError.
      const error = new ProviderError({
        provider: adapter.name,
        model: adapter.model,
        requestId: providerRequestId,
        error: {
          kind: 'server_error',
          retryable: false,
          status,
          message: `the ${status} stream could not be read (tool call "${unwritable}": arguments nested too deep); not resent to this model: the provider had generated it, and may bill it`,
        },
        cause: malformedReply(`tool call "${unwritable}" (arguments nested too deep)`),
      })
      if (!collector.sawToken) return { ok: false, error }
      unreadableAnswer = new StreamInterruptedError({
        model: adapter.model,
        provider: adapter.name,
        partialText: response.text,
        partialContent: response.content,
        cause: error,
      })
      throw unreadableAnswer
    }
    // An answer that ended in an error with no token (finish reason `error`
    // alone): nothing of it reaches the consumer, runModel makes it a failed
    // attempt (`answerEndedInError`) and asks again or falls back.
    if (committed || collector.finishReason !== 'error') {
      for (const early of held.splice(0)) sink.push(early)
    }
    return { ok: true, status, response }
  }
  // The request id header the adapter read from the 200 (as a whole answer carries it).
  let providerRequestId: string | undefined
  try {
    const opened = await adapter.open(options.request, options.send)
    if (!opened.ok) return opened
    // The 200's headers came (the timer runs from sending, before them).
    received.answered = true
    received.status = opened.status
    received.usageSoFar = opened.usageSoFar
    received.responseIdSoFar = opened.responseIdSoFar
    received.serviceTierSoFar = opened.serviceTierSoFar
    received.logprobsSoFar = opened.logprobsSoFar
    providerRequestId = opened.providerRequestId
    for await (const event of opened.events) {
      // An empty text or thinking delta (Anthropic's `text_delta` of "",
      // Gemini's part of `text: ""`) carries nothing: it is no first token.
      // Counted as one, it stopped the first-token timer and ended retries:
      // an overload frame right after it failed the call ("broke after the
      // first token (0 characters received)") instead of asking again.
      if (isEmptyDelta(event)) continue
      collector.add(event)
      if (event.type === 'finish') {
        finished = true
        stopGrace()
        graceTimer = clock.setTimeout(() => options.abort(afterFinish), END_GRACE_MS)
      } else if (finished && event.type !== 'signature') {
        // Answer after a finish: that finish was no end (a server's bogus or
        // early one), so neither a silence nor a cut after it is a whole answer.
        finished = false
        stopGrace()
        graceTimer = undefined
      }
      // Anthropic's redacted thinking comes whole once the model has thought:
      // output it generated (and bills), as thinking deltas are, so the
      // timer stops and `firstTokenMs` is taken there. Left running, an
      // answer whose reasoning came redacted failed as "no token" while its
      // text was on the way — where the same answer with its thinking in the
      // clear succeeded. Still held, not committed: the client has nothing
      // it can show (a gateway writes nothing for it), so a failure right
      // after it is retried or falls back as one before any token.
      if (event.type === 'signature' && event.redacted === true) firstToken()
      if (!collector.sawToken) {
        held.push(event)
        continue
      }
      if (!committed) {
        committed = true
        firstToken()
        options.onFirstToken()
        for (const early of held.splice(0)) sink.push(early)
      }
      sink.push(event)
      // A consumer reading at its own pace and behind: stop reading the
      // body (the provider's socket holds the rest) until it catches up.
      const behind = sink.behind()
      if (behind !== undefined) await caughtUp(behind, options.send.signal, options.send.deadline)
    }
    stopTimer()
    // A stream that ended with no finish reason and no content is no answer
    // (`collector.empty`), whatever its bytes — an empty body, `[DONE]`
    // alone or after a role-only chunk, Anthropic's `message_start` then
    // `message_stop`: as a whole answer's empty 200 body, a retryable
    // server_error, not a success with no text (a gateway passed it on as
    // a 200 of `[DONE]` alone). Nothing of it was delivered, so the call
    // may still ask again or fall back. (A body that ends before its end
    // marker after an event is a cut: `readEvents` failed it already.)
    // Charged nothing — unless the provider reported its counts in it (an
    // OpenAI usage chunk, Anthropic's `message_start`): it says it counted,
    // and bills, the prompt, so the attempt is charged by them
    // (`ProviderError.usage`), as an error after Gemini's counts is.
    if (collector.empty) {
      const usage = inputCounted(opened.usageSoFar)
      return {
        ok: false,
        error: new ProviderError({
          provider: adapter.name,
          model: adapter.model,
          requestId: providerRequestId,
          error: {
            kind: 'server_error',
            retryable: true,
            status: opened.status,
            message: `the ${opened.status} stream ended with no answer (no content and no finish reason); asked again`,
            ...(usage === undefined ? {} : { usage }),
          },
        }),
      }
    }
    return whole(opened.status)
  } catch (thrown) {
    if (thrown === unreadableAnswer) throw thrown
    // The whole answer came and the body did not end: done, as at its end
    // marker. So is one whose body broke after it (a reset instead of
    // `[DONE]`): the consumer was handed the finish, and a body that closes
    // there is whole (readEvents) — the outcome must not depend on how the
    // connection ended. Only the consumer's own stop passes through.
    if (thrown === afterFinish) return whole(received.status ?? 200)
    if (finished && !(sink.signal.aborted && thrown === sink.signal.reason)) {
      return whole(received.status ?? 200)
    }
    if (thrown === timeout) {
      // The request was sent: the provider has it and may be generating —
      // and billing — an answer it was slow to start (or, before its
      // headers, to acknowledge). Like a read timeout it is not resent to
      // the same model (unless the caller allows one resend); a fallback may
      // still take it. A 2xx whole answer (JSON where a stream was asked
      // for) being read when the timer ran out had its headers too: 2xx, and
      // charged as the whole answer it is (`billedBy`), not as "no headers".
      const wholeAnswer = !received.answered && options.send.answerStarted === true
      const ms = options.firstTokenTimeoutMs
      return {
        ok: false,
        error: new ProviderError({
          provider: adapter.name,
          model: adapter.model,
          // The 200's, when its headers came before the timer ran out.
          requestId: providerRequestId,
          error: {
            kind: 'timeout',
            retryable: false,
            status: received.answered || wholeAnswer ? 200 : 0,
            message: received.answered
              ? `no token within firstTokenTimeoutMs (${ms} ms); keep-alive comments do not count`
              : wholeAnswer
                ? `a whole answer (JSON, not a stream) was still being read at firstTokenTimeoutMs (${ms} ms)`
                : `no response headers, and so no token, within firstTokenTimeoutMs (${ms} ms)`,
          },
          cause: timeout,
        }),
      }
    }
    if (!collector.sawToken) {
      // The caller's own reason passes as it is, unread: `instanceof` on a
      // revoked Proxy throws, and the call rejected with llm's TypeError.
      if (sink.signal.aborted && thrown === sink.signal.reason) throw thrown
      if (thrown instanceof ProviderError) return { ok: false, error: thrown }
      throw thrown
    }
    const deadline = options.send.deadline
    let cause = thrown
    if (sink.signal.aborted && thrown === sink.signal.reason) {
      // The consumer left its loop after reading `finish` (OpenAI's comes
      // with the usage chunk, before `[DONE]`): it has the whole answer, and
      // so does the collector. A success, as if the end marker had come.
      if (sink.stoppedAfterFinish(thrown)) return whole(received.status ?? 200)
      // The consumer left its loop after the deadline had stopped the work —
      // a wait of its own given the deadline's signal (a drain, a timer)
      // rejected and took the loop with it, a tick before the aborted body
      // says so here: the deadline's stop, as when the body says it first
      // (an expiry, or the client that left), interrupted below. It read as
      // the caller's choice: `stoppedBy: 'caller'`, kind `aborted`, `result`
      // a bare AbortError. An observe-only deadline whose time passed
      // stopped nothing (its signal is not aborted): a break then is the
      // caller's.
      if (!(sink.leftLoop(thrown) && deadline?.done === true && deadline.signal.aborted)) {
        // Ended on purpose — the stream's cancel or the caller's signal,
        // which `sink.signal` follows: the reason passes through as it is.
        throw thrown
      }
      cause = deadline.reason
    }
    throw new StreamInterruptedError({
      model: adapter.model,
      provider: adapter.name,
      partialText: collector.text(),
      partialContent: collector.partialContent(),
      partialLogprobs: received.logprobsSoFar?.(),
      cause: hopDeadline(cause, deadline) ?? cause,
    })
  } finally {
    stopTimer()
    stopGrace()
  }
}

/**
 * An Hourglass hop behind this URL (@hourglass/gateway) ends a started
 * stream whose budget — the one this attempt sent it — ran out with an
 * error event coded `deadline_exceeded`: this call's deadline, told early
 * (the hop ends within its reserves of the end), as a 504 with
 * `x-deadline-expired: 1` is read before a stream starts (createAdapter).
 * Read as the provider's server_error, a gateway in front answered
 * `stream_interrupted` and counted a provider failure. Only under an
 * enforcing deadline of this call's.
 */
function hopDeadline(thrown: unknown, deadline: Deadline | undefined): Error | undefined {
  if (deadline === undefined || deadline.observe) return undefined
  const code =
    thrown instanceof ProviderError
      ? thrown.providerCode
      : thrown instanceof ProviderReplyError
        ? thrown.error.providerCode
        : undefined
  return code === 'deadline_exceeded' ? expiryError(deadline) : undefined
}

function isEmptyDelta(event: StreamEvent): boolean {
  return (
    (event.type === 'text' && event.text === '') ||
    (event.type === 'thinking' && event.thinking === '')
  )
}

/** The reason the wait for the end marker after a `finish` is given up with; recognised by identity. */
class AfterFinishGrace extends Error {
  constructor() {
    super(`no end marker within ${END_GRACE_MS} ms of the answer's finish`)
    this.name = 'AfterFinishGrace'
  }
}

/**
 * Waits for a consumer that is behind, or for the attempt's end (a cancel,
 * the caller's signal, or the deadline — which reaches undici through the
 * interceptor and aborts no signal of ours, so it is listened to itself: a
 * consumer that kept its iterator but stopped reading left `result` pending
 * past the deadline, and a cost budget's reservation held): the loop then
 * reads on and meets the aborted body.
 */
async function caughtUp(
  behind: Promise<void>,
  signal: AbortSignal,
  deadline: Deadline | undefined,
): Promise<void> {
  // Core's one wait; its rejection (the deadline's or the signal's reason)
  // is not this loop's to throw: the aborted body it reads next says it.
  await untilEnded(behind, { signal, deadline }).catch(noop)
}

/** The reason a first-token timer aborts with; recognised by identity, and the cause of its `ProviderError`. */
class FirstTokenTimeout extends Error {
  constructor(ms: number) {
    super(`no token within ${ms} ms`)
    this.name = 'FirstTokenTimeout'
  }
}

/** The attempt failed because its first token did not come within `firstTokenTimeoutMs`. */
export function isFirstTokenTimeout(error: ProviderError): boolean {
  return error.cause instanceof FirstTokenTimeout
}

function noop(): void {}

/**
 * The counts a stream's parser holds (`OpenResult.usageSoFar`) when they
 * have an input count; else undefined — so too when a custom adapter's
 * getter throws (the attempt is then charged nothing, as before).
 */
function inputCounted(read: (() => Usage | undefined) | undefined): Usage | undefined {
  let usage: Usage | undefined
  try {
    usage = read?.()
  } catch {
    return undefined
  }
  return usage !== undefined && usage.inputTokens > 0 ? usage : undefined
}
