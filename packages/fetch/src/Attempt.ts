import type { Http2Stream } from 'node:http2'
import type { Socket } from 'node:net'
import { isErrored, isReadable } from 'node:stream'
import {
  allowFanOut,
  boundingDeadline,
  type Clock,
  type Deadline,
  errorCode,
  expiryError,
  fieldOf,
  isDeadlineExceeded,
} from '@hourglass/core'
import { publishAttempt, publishAttemptEnd } from './channels.js'
import { BodyNotReadError } from './errors/BodyNotReadError.js'
import { BodyTimeoutError } from './errors/BodyTimeoutError.js'
import { ConnectTimeoutError } from './errors/ConnectTimeoutError.js'
import { DnsTimeoutError } from './errors/DnsTimeoutError.js'
import type { EgressErrorDetails, EgressPhase } from './errors/EgressError.js'
import { HeadersTimeoutError } from './errors/HeadersTimeoutError.js'
import type { PhaseLimits } from './options.js'
import { queuedBytes } from './queuedBytes.js'
import { resetUpload } from './resetUpload.js'

/** Per-phase durations of one attempt, ms. A phase that did not happen (keep-alive, IP literal) is undefined. */
export interface AttemptTimings {
  dnsMs: number | undefined
  connectMs: number | undefined
  /** Request written → response headers. */
  headersMs: number | undefined
  /** Response headers → last body byte. */
  bodyMs: number | undefined
  /**
   * The longest silence in the body phase, as `bodyTimeoutMs` counts it:
   * headers → first chunk, chunk → chunk, last chunk → end, time the reader
   * paused left out. Measured only for an attempt whose timings are asked
   * for (probe); undefined otherwise, or with no body phase.
   */
  bodyGapMs?: number | undefined
  totalMs: number | undefined
}

export interface AttemptInit {
  deadline: Deadline | undefined
  /**
   * Under a budget on trial (an observe-only `deadline`): the enforcing
   * deadline above it as the call found it when it began
   * (`OutboundCall.bound`). A trial disposed since bounds nothing new, but
   * this attempt — a retry, a redirect hop — is still the call's, bounded
   * and ended by that one. Undefined: read off `deadline` alone.
   */
  bound?: Deadline | undefined
  signal: AbortSignal | undefined
  limits: PhaseLimits
  clock: Clock
  method: string
  url: string
  /**
   * The URL this dispatch went to, whole (`url` is cut for events): what a
   * redirect's relative `Location` is resolved against. Read only then.
   */
  target?(): string
  number: number
  /**
   * Measure the longest gap between body chunks (`timings.bodyGapMs`): a
   * clock read per chunk, so only for an attempt whose timings are read.
   */
  measureGaps?: boolean | undefined
  /** The redirect this dispatch follows within attempt `number` (createFetch); undefined for the attempt's own request. */
  redirect?: number | undefined
  /** On a retry: the failure code that justified it (its attempt message says so). */
  retryReason?: string | undefined
  /** Publish no events (the connector's own bookkeeping for connections made outside any attempt). */
  silent?: boolean
}

type State = EgressPhase | 'queued' | 'done'

const TIMEOUTS: Record<EgressPhase, new (details: EgressErrorDetails) => Error> = {
  dns: DnsTimeoutError,
  connect: ConnectTimeoutError,
  headers: HeadersTimeoutError,
  body: BodyTimeoutError,
}

const NONE: never[] = []
const noop = (): void => {}

/** A phase timer this close to the deadline's expiry counts as the deadline (it wins ties). */
const TIE_MS = 1

/**
 * How far an HTTP/2 session's socket must write for an upload on it to count
 * as moving (`watchStream`): more than the control frames a session writes
 * while no data goes (a PING undici sends every minute, ~50 bytes with TLS),
 * less than the window update (32 KB, half of the initial 64 KB) a server
 * reading an upload sends.
 */
const H2_MOVE_BYTES = 16 * 1024

/**
 * One outbound attempt: which phase it is in, one timer for that phase's
 * limit, and the links to the deadline and the caller's signal — all released
 * by `finish()`. A phase whose own limit is longer than the time left gets no
 * timer of its own: the deadline's abort ends it, so the reason is the
 * deadline's (`DEADLINE_EXCEEDED`), never a phase timeout.
 */
export class Attempt {
  readonly init: AttemptInit
  readonly startedAt: number
  state: State = 'queued'
  bytesReceived = 0
  statusCode: number | undefined
  /**
   * The `Location` a 3xx answer carried (createFetch names it when fetch
   * cannot follow the redirect). Read only for a 3xx: nothing on a 2xx.
   */
  location: string | undefined
  /**
   * createFetch's `redirect` mode for the call (`follow`, `manual`, `error`);
   * undefined through the interceptor alone, whose 3xx something above it
   * may or may not follow.
   */
  redirectMode: string | undefined
  /** True when the answer was a 504 with `x-deadline-expired: 1` (see the end event's `upstreamDeadline`). */
  upstreamDeadline: true | undefined
  headerMs: number | undefined
  /** Why the attempt was stopped by us (phase limit, deadline, caller); undefined otherwise. */
  reason: unknown
  /**
   * The timeout error this attempt's own phase timer raised, if one did: the
   * connector names its host on that one alone. A caller's or a deadline's
   * abort reason is stored as `error` too, and may be a timeout error of the
   * same class (a fan-out stopping its other calls with the first one's, one
   * from undici's connector): named, it was rewritten in place to name this
   * call's target, which it never was about.
   */
  ownTimeout: Error | undefined
  /**
   * `'caller'` when the attempt ended because the caller stopped it — its
   * signal aborted, or it cancelled (destroyed) the body it was handed —
   * whatever reason it gave but a deadline's end: its `attempt-end` says
   * so, and no retry is judged on a body the caller chose to stop reading
   * (`stopByCaller`).
   */
  stoppedBy: 'caller' | undefined
  /**
   * The body createFetch handed the caller (a web stream), while the attempt
   * reads it: one the caller cancelled is closed by the time undici stops
   * the request, where a failure (a reset, a corrupt encoding, a limit)
   * leaves it readable until fetch errors it. Released when the attempt ends.
   */
  callerBody: ReadableStream<unknown> | undefined
  error: unknown
  readonly timings: AttemptTimings = {
    dnsMs: undefined,
    connectMs: undefined,
    headersMs: undefined,
    bodyMs: undefined,
    bodyGapMs: undefined,
    totalMs: undefined,
  }
  /** Set by the connector that took this attempt's connection, so a socket is made for one attempt only. */
  connectClaimed = false
  /** The request has a body (sendAttempt): its socket is watched while it is written (`watchUpload`). */
  uploads = false
  /**
   * An interim (1xx) response arrived: the server has the request and is
   * answering it, so whatever fails after is past the first byte — never
   * retried, however few body bytes came (`interim()`).
   */
  answerBegun = false
  /**
   * The dispatcher beneath threw as this attempt was handed to it
   * (`sendAttempt`): nothing was sent, and what it threw is its own refusal
   * — a caller's interceptor, a dispatcher of the caller's — never the
   * upstream's failure, whatever its code says. Never retried.
   */
  dispatchThrew = false

  #phaseStart = 0
  #timer: unknown
  /**
   * The phase in progress is bounded by the deadline, not by a timer of its
   * own (its limit was longer than the time left, so it stays longer): a body
   * chunk then re-arms nothing, and reads no clock. Only a backstop at the
   * phase's own limit is armed (`#backstop`), for a deadline disposed first.
   */
  #untimed = false
  /**
   * Something moved since the backstop was armed — a body chunk, an interim
   * response —, noted without a clock read.
   */
  #movedUntimed = false
  /** When the last piece of the request went out while the phase was left to the deadline (our clock). */
  #sentAt = 0
  /**
   * The enforcing deadline, once found to have no time left yet not ended
   * past a tie's wait (`#backstop`): disposed after its time passed but
   * before its late timer ran. It never ends, so it bounds nothing: read as
   * a deadline with no expiry (`#left`), as one disposed in time reads.
   */
  #neverEnds: Deadline | undefined
  /** When the backstop first found the deadline's time up with the attempt still going (our clock). */
  #dueSeenAt: number | undefined
  /** When the phase timer was last armed (our clock). */
  #armedAt = 0
  #bodyPaused = false
  /** The phase in progress's own limit, when whoever runs it set one (`enter`). */
  #phaseLimit: number | undefined
  /** Since when the body has been silent (measureGaps): the phase start, the last chunk or the reader's resume. */
  #gapFrom = 0
  /** `attempt` was published: its `attempt-end` follows. An attempt stopped before it was sent publishes neither. */
  #announced = false
  /** Its events wait for `announceHeld` (`holdAnnouncement`). */
  #held = false
  /** It ended while its events were held: the `attempt-end` is published after its `attempt`, with this phase. */
  #endHeld = false
  #heldPhase: string | undefined
  /**
   * A redirect fetch acts on (`follow` with a `Location`, or `error`) that
   * ended before fetch decided: its `attempt-end` waits for `redirectSettled`,
   * which says whether fetch followed it or failed at it. The phase it ended in.
   */
  #redirectPending: { phase: string | undefined } | undefined
  /** fetch failed at this redirect (a stream body, the limit, a refused Location or hop, `redirect: 'error'`). */
  #redirectRefused = false
  #abortHandlers: ((reason: unknown) => void)[] = []
  /** Unsubscribes from the deadline (a `Deadline.onDone` hook: no AbortSignal is made per call). */
  #offDeadline: (() => void) | undefined
  #onSignal: (() => void) | undefined
  #finishHooks: ((attempt: Attempt) => void)[] | undefined
  /**
   * Reads where an upload stands (`watchSocket`, `watchStream`) while the
   * attempt waits for the response headers: a reading that changes while
   * the upload moves, undefined once its connection is gone. Released when
   * the headers arrive or the attempt ends.
   */
  #upload: (() => number | undefined) | undefined
  /** Its reading at the last look. */
  #reading: number | undefined
  /**
   * The HTTP/2 stream this attempt's upload goes out on (`watchStream`):
   * reset, not ended, when the upload is cut short (`cutUpload`). Kept past
   * the attempt's end: the read that cuts an answered upload comes after.
   */
  #h2Upload: Http2Stream | undefined

  constructor(init: AttemptInit) {
    this.init = init
    this.startedAt = init.clock.now()
    const { deadline, signal } = init
    // Whatever its expiry: a Deadline.never() can still be cancelled, and
    // its cancel must stop the request in flight too. An observe-only
    // (dark mode) deadline too: its onDone hears a cancel only, never its
    // observed expiry, and a cancel is no enforcement decision but a fact —
    // the caller is gone (the client left) — so the work for it stops in
    // every mode. Its expiry still changes nothing here.
    if (deadline) {
      this.#offDeadline = deadline.onDone((reason) => this.abort(reason))
      // A budget on trial (an observe child) is bounded by its enforcing
      // ancestor, whose end reaches the trial only while it is its child: a
      // trial disposed mid-call (its `using` scope left) no longer hears it,
      // and the attempt ran on past it to its phase limit — for good under
      // a limit of 0. So the attempt hears that ancestor too, under trials
      // only. Assigned before it subscribes: one already ended finishes the
      // attempt at once, and finish() releases the trial's hook.
      const enforced = deadline.observe ? (boundingDeadline(deadline) ?? init.bound) : undefined
      if (enforced !== undefined && enforced !== deadline && !this.done) {
        const offTrial = this.#offDeadline
        // Kept for the attempt's life: work in flight keeps the bound it
        // started under. A trial disposed while live bounds nothing new (an
        // attempt made after the dispose runs as under no deadline, core's
        // boundingDeadline), but this one was sent for the request, and its
        // end — the expiry, or the cancel of a client that left — still ends
        // it: re-read at that end, a cancel ended nothing, and under a limit
        // of 0 the attempt ran for good.
        const offEnforced = enforced.onDone((reason) => this.abort(reason))
        // Read again: onDone ran the abort at once for an ancestor already ended.
        if (!this.done) {
          this.#offDeadline = () => {
            offTrial()
            offEnforced()
          }
        }
      }
    }
    // Created under a deadline that has already ended: onDone finished the
    // attempt at once, and nothing may be added that finish() would release.
    if (this.state === 'done') return
    if (signal?.aborted) {
      this.stopByCaller(signal.reason)
      this.abort(signal.reason)
      return
    }
    if (signal && !isDeadlineSignal(deadline, signal)) {
      // Not the deadline's own signal (a plan slice's step is given its
      // slice's, a dark-mode handler `req.deadline.signal`): onDone above
      // already stops the attempt when it aborts (for an observe-only
      // deadline both fire on a cancel alone).
      allowFanOut(signal)
      this.#onSignal = () => {
        this.stopByCaller(signal.reason)
        this.abort(signal.reason)
      }
      signal.addEventListener('abort', this.#onSignal, { once: true })
    }
  }

  get done(): boolean {
    return this.state === 'done'
  }

  elapsed(): number {
    return this.init.clock.now() - this.startedAt
  }

  /**
   * What bounds a phase with `limitMs` (`0` = none) entered now: the smaller
   * of it and what the enforcing deadline leaves; Infinity for neither.
   */
  budgetMs(limitMs: number): number {
    const enforced = this.#enforced()
    const left = enforced ? this.#left(enforced, this.init.clock.now()) : Number.POSITIVE_INFINITY
    return limitMs > 0 ? Math.min(limitMs, left) : left
  }

  /**
   * Keep this attempt's `attempt` event (and its `attempt-end`, should it
   * end meanwhile) until `announceHeld`. For a retry the interceptor sends at
   * once: the Agent beneath may have been closed since the attempt before
   * was sent, and refuses it as it is handed over — a retry never made,
   * which announced was counted a retry made beside the `retry-skipped`
   * that says it was not (and traced as an egress span failing with
   * UND_ERR_CLOSED), where createFetch announces no such attempt.
   */
  holdAnnouncement(): void {
    this.#held = true
  }

  /** Publish what `holdAnnouncement` kept (`made`), or drop it: the attempt was never made. */
  announceHeld(made: boolean): void {
    if (!this.#held) return
    this.#held = false
    const ended = this.#endHeld
    this.#endHeld = false
    if (!this.#announced) return
    if (!made) {
      this.#announced = false
      return
    }
    this.#publishStart()
    if (ended) this.#publishEnd(this.error, this.#heldPhase)
  }

  /** Called once the request is dispatched, with the header value written. */
  dispatched(headerMs: number | undefined): void {
    this.headerMs = headerMs
    if (this.init.silent) return
    this.#announced = true
    if (!this.#held) this.#publishStart()
  }

  #publishStart(): void {
    const headerMs = this.headerMs
    publishAttempt(() => ({
      handle: this.#handle(),
      deadline: this.init.deadline,
      method: this.init.method,
      url: this.init.url,
      attempt: this.init.number,
      redirect: this.init.redirect,
      // Of the deadline its header is written off (`sentUnder`): a trial
      // disposed since the call began read Infinity beside the parent's header.
      remainingMs: this.#sentUnderRemaining(),
      headerMs,
      retryReason: this.init.retryReason,
    }))
  }

  /**
   * Move to `phase`, closing the timing of the previous one, and arm the new
   * phase's timer: `limitMs` when given (the connector's own DNS / connect
   * limit), else the attempt's limit for that phase.
   */
  enter(phase: EgressPhase, limitMs?: number): void {
    if (this.state === 'done') return
    // One clock read for the phase change: this runs twice per request.
    const now = this.init.clock.now()
    this.#closeTiming(now)
    this.state = phase
    this.#phaseStart = now
    this.#upload = undefined
    this.#untimed = false
    this.#phaseLimit = limitMs
    if (phase === 'body' && this.init.measureGaps) {
      this.#gapFrom = now
      this.timings.bodyGapMs = 0
    }
    this.#arm(now)
  }

  /** The connection is ready: close the connect timing and wait (no timer) for the request to be written. */
  connected(): void {
    if (this.state === 'done') return
    this.#closeTiming(this.init.clock.now())
    this.#clear()
    this.state = 'queued'
  }

  /**
   * A piece of the request went out (a body chunk, or its end): the headers
   * limit counts from the last one. It is the server's time to first byte,
   * not the upload's length: counted from the first byte written, a normal
   * upload longer than `headersTimeoutMs` failed as a HEADERS_TIMEOUT with
   * the server still reading it. A stalled upload still fails at the limit.
   * undici tells of pieces as it hands them to the socket: a body held in
   * memory is one piece, told at once — `watchSocket` covers that.
   * Re-armed only when at least a millisecond has passed: a body written at
   * once (a string, a Buffer) costs no timer churn.
   */
  sending(): void {
    if (this.#untimed) {
      // The backstop counts from here, as the timer below is re-armed — in
      // the headers phase only: an upload still going once the response
      // has begun says nothing of the response body's silence.
      if (this.state === 'headers') this.#sentAt = this.init.clock.now()
      return
    }
    if (this.state !== 'headers' || this.#timer === undefined) return
    if (this.#upload !== undefined) this.#reading = this.#upload()
    const now = this.init.clock.now()
    if (now - this.#armedAt < 1) return
    this.#arm(now)
  }

  /**
   * An interim response (1xx: 102 Processing, 103 Early Hints) arrived: the
   * server is alive, so the headers limit — its silence — starts again, as
   * undici restarts its own headers timer on each one. The deadline stays
   * where it is (its own abort, not this timer). The answer has begun: a
   * failure after it (the limit ending after a 1xx, a reset) is past the
   * first byte, and a request the server may be acting on is never sent again.
   */
  interim(): void {
    if (this.state !== 'headers') return
    this.answerBegun = true
    if (this.#untimed) this.#movedUntimed = true
    if (this.#untimed || this.#timer === undefined) return
    this.#arm(this.init.clock.now())
  }

  /**
   * The socket this attempt's upload is written to (`watchUpload`, HTTP/1.1).
   * undici hands a body held in memory (a Buffer, a string, a Blob) to one
   * `socket.write` and says it was sent at once, while the kernel takes it
   * only as fast as the server reads: the headers limit, when it fires, looks
   * at what the socket still holds instead, and waits again while that has
   * moved since its last look. A peer that stopped reading moves nothing:
   * the next look fails it, between one and two limits after it stopped.
   */
  watchSocket(socket: Socket): void {
    this.#watch(() => (socket.destroyed ? undefined : queuedBytes(socket)))
  }

  /**
   * The HTTP/2 stream this attempt's upload is written to, and its session's
   * socket (`watchUpload`). The stream's own buffer holds a body held in
   * memory whole until its last byte is sent, and Node tells no stream's
   * progress apart: while the stream still holds some of it, the session's
   * socket writing more counts as the upload moving — the rule Node's own
   * `Http2Stream` timeout follows (`chunksSentSinceLastWrite`), once at
   * least `H2_MOVE_BYTES` have gone since the last move counted. Once the
   * stream's buffer is empty, the limit counts the server's silence.
   */
  watchStream(stream: Http2Stream, socket: Socket): void {
    this.#h2Upload = stream
    let counted = socket.bytesWritten
    this.#watch(() => {
      if (stream.destroyed || socket.destroyed) return undefined
      if (stream.writableLength === 0) return -1
      if (socket.bytesWritten - counted >= H2_MOVE_BYTES) counted = socket.bytesWritten
      return counted
    })
  }

  #watch(read: () => number | undefined): void {
    if (this.state !== 'headers') return
    this.#upload = read
    this.#reading = read()
  }

  /**
   * The upload stops short of its end (the attempt failed, or createFetch
   * stopped the rest of a body the server answered early): over HTTP/2 its
   * stream is reset (RST_STREAM CANCEL), so the server reads an aborted
   * request, not the part sent as the whole body (`resetUpload`). Over
   * HTTP/1 undici destroys the socket of a request whose upload it leaves.
   */
  cutUpload(): void {
    if (this.#h2Upload !== undefined) resetUpload(this.#h2Upload)
  }

  /** The synchronous part of the request's write is over: where the upload stands now is the next look's reference. */
  uploadWritten(): void {
    if (this.#upload !== undefined) this.#reading = this.#upload()
  }

  /** A body chunk arrived: count it and restart the idle timer. */
  chunk(bytes: number): void {
    this.bytesReceived += bytes
    if (this.state !== 'body' || this.#bodyPaused) return
    const measure = this.init.measureGaps === true
    if (this.#untimed) this.#movedUntimed = true
    if (this.#untimed && !measure) return
    const now = this.init.clock.now()
    if (measure) this.#endGap(now)
    if (!this.#untimed) this.#arm(now)
  }

  /** The reader stopped pulling (backpressure): a slow reader is not a silent server. */
  pauseBody(paused: boolean): void {
    const was = this.#bodyPaused
    this.#bodyPaused = paused
    if (this.state !== 'body') return
    if (this.init.measureGaps && was !== paused) {
      // The silence so far counts (the idle timer ran through it); the
      // pause does not (the timer is off while the reader is not reading).
      const now = this.init.clock.now()
      if (paused) this.#endGap(now)
      else this.#gapFrom = now
    }
    if (paused) this.#clear()
    else this.#arm(this.init.clock.now())
  }

  /** Register what stops the request; returns the unregister function. */
  onAbort(handler: (reason: unknown) => void): () => void {
    if (this.state === 'done') return noop // never called: an attempt is stopped at most once, before it is done
    this.#abortHandlers.push(handler)
    return () => {
      const at = this.#abortHandlers.indexOf(handler)
      if (at >= 0) this.#abortHandlers.splice(at, 1)
    }
  }

  /**
   * Runs `hook` when this attempt ends — at once when it has (a 204 or 304
   * ends with its headers, before its caller registers): kept for an end
   * that had come, it never ran.
   */
  onFinish(hook: (attempt: Attempt) => void): void {
    if (this.state === 'done') {
      hook(this)
      return
    }
    if (this.#finishHooks) this.#finishHooks.push(hook)
    else this.#finishHooks = [hook]
  }

  /**
   * What ends this attempt next comes from the caller (its signal, its
   * cancel of the body), for `reason`: marked before the end it brings. A
   * no-op once the attempt is over or stopped for another reason (that
   * reason came first), and for a deadline's end (`endsDeadline`): a signal
   * that follows the deadline hands its end on, no choice of the caller's.
   */
  stopByCaller(reason: unknown): void {
    if (this.state === 'done' || this.reason !== undefined) return
    const { deadline, signal } = this.init
    if (endsDeadline(deadline, reason)) return
    // undici's request() stops a request its signal's abort ends through
    // the body it made, with a reason of its own (`RequestAbortedError`):
    // the signal's says whose stop it is. Read only while the attempt has
    // not heard that abort (it ends the attempt).
    if (signal?.aborted === true && endsDeadline(deadline, signal.reason)) return
    this.stoppedBy = 'caller'
  }

  /** Stop the attempt for `reason`; the first reason wins. */
  abort(reason: unknown): void {
    if (this.state === 'done' || this.reason !== undefined) return
    this.reason = reason ?? new DOMException('This operation was aborted', 'AbortError')
    const handlers = this.#abortHandlers
    this.finish(this.reason)
    for (const handler of handlers) handler(this.reason)
  }

  /** The attempt is over (ok when `error` is undefined): release every timer and listener. */
  finish(error?: unknown): void {
    if (this.state === 'done') return
    const failedPhase = this.state === 'queued' ? undefined : this.state
    const body = this.callerBody
    if (body !== undefined) {
      this.callerBody = undefined
      if (error !== undefined && this.reason === undefined && cancelled(body, error)) {
        this.stopByCaller(error)
      }
    }
    const now = this.init.clock.now()
    if (this.state === 'body' && this.init.measureGaps && !this.#bodyPaused) this.#endGap(now)
    this.#closeTiming(now)
    this.timings.totalMs = now - this.startedAt
    this.state = 'done'
    this.error = error
    this.#clear()
    this.#upload = undefined
    // Failed with its upload still going: reset before undici's abort (run
    // by the abort handlers below) closes the stream with NO_ERROR, which a
    // server reads as the body's end.
    if (error !== undefined) this.cutUpload()
    this.#abortHandlers = NONE
    const { signal } = this.init
    this.#offDeadline?.()
    if (this.#onSignal && signal) signal.removeEventListener('abort', this.#onSignal)
    this.#offDeadline = undefined
    this.#onSignal = undefined
    if (this.#held) {
      this.#endHeld = true
      this.#heldPhase = failedPhase
    } else if (this.#announced) {
      if (error === undefined && this.#awaitsFetch()) this.#redirectPending = { phase: failedPhase }
      else this.#publishEnd(error, failedPhase)
    }
    const hooks = this.#finishHooks
    this.#finishHooks = undefined
    if (hooks) for (const hook of hooks) hook(this)
  }

  // The attempt's identity in its events: made only when someone listens,
  // and not the Attempt itself (a subscriber must not reach its internals).
  #eventHandle: object | undefined
  #handle(): object {
    this.#eventHandle ??= {}
    return this.#eventHandle
  }

  #publishEnd(error: unknown, failedPhase: string | undefined): void {
    publishAttemptEnd(() => ({
      handle: this.#handle(),
      deadline: this.init.deadline,
      method: this.init.method,
      url: this.init.url,
      attempt: this.init.number,
      redirect: this.init.redirect,
      elapsedMs: this.timings.totalMs ?? 0,
      statusCode: this.statusCode,
      errorCode: error === undefined ? undefined : errorCode(error),
      phase: error === undefined ? undefined : phaseOf(error, failedPhase),
      bytesReceived: this.bytesReceived,
      stoppedBy: error === undefined ? undefined : this.stoppedBy,
      upstreamDeadline: this.upstreamDeadline,
      followed: this.#followed(),
    }))
  }

  /**
   * For a redirect status only: whether fetch goes on to its target (true:
   * `redirect: 'follow'` and a `Location`), or this answer is the caller's
   * (false: `redirect: 'manual'`, or a 3xx with no `Location`, which fetch
   * returns as it is). Undefined when it is not known here.
   */
  #followed(): boolean | undefined {
    const status = this.statusCode
    if (!(status === 301 || status === 302 || status === 303 || status === 307 || status === 308))
      return undefined
    if (this.redirectMode === 'manual') return false
    if (this.redirectMode === 'follow') {
      if (this.location === undefined) return false
      // fetch failed at it: not followed, and not the caller's answer either.
      return this.#redirectRefused || this.error !== undefined ? undefined : true
    }
    return undefined
  }

  /** A redirect status fetch acts on once this hop has ended: follows it, or fails the call at it. */
  #awaitsFetch(): boolean {
    const status = this.statusCode
    if (!(status === 301 || status === 302 || status === 303 || status === 307 || status === 308))
      return false
    return (
      this.redirectMode === 'error' ||
      (this.redirectMode === 'follow' && this.location !== undefined)
    )
  }

  /**
   * createFetch: fetch sent this redirect's next hop (`error` undefined), or
   * the call failed at it with `error` (fetch refused to follow, or the next
   * hop was refused unsent). Publishes the `attempt-end` `finish` kept back;
   * a no-op for any other attempt, or once said.
   */
  redirectSettled(error?: unknown): void {
    const pending = this.#redirectPending
    if (pending === undefined) return
    this.#redirectPending = undefined
    if (error !== undefined) this.#redirectRefused = true
    this.#publishEnd(error, error === undefined ? undefined : (pending.phase ?? 'body'))
  }

  /** The deadline's error for this attempt (its reason once it has fired). */
  deadlineError(cause?: unknown): unknown {
    const deadline = this.init.deadline
    if (!deadline) return cause
    if (deadline.reason !== undefined) return deadline.reason
    // A budget on trial is ended by the enforcing deadline above it: that one's expiry.
    return expiryError(boundingDeadline(deadline) ?? this.init.bound ?? deadline, { cause })
  }

  /**
   * The deadline that enforces this attempt's time: `boundingDeadline` of
   * its own, or — a trial disposed since its call began — the bound the
   * call began under (`AttemptInit.bound`).
   */
  #enforced(): Deadline | undefined {
    return boundingDeadline(this.init.deadline) ?? this.init.bound
  }

  /**
   * The deadline whose time this attempt tells the next hop: its own, or —
   * a trial disposed since its call began, which would tell none — the
   * bound the call began under. Its own while it bounds: a live trial's
   * header is written off it (core's `writeDeadline`), as before.
   */
  get sentUnder(): Deadline | undefined {
    const { deadline, bound } = this.init
    return bound !== undefined && boundingDeadline(deadline) === undefined ? bound : deadline
  }

  #sentUnderRemaining(): number {
    const under = this.sentUnder
    return under ? under.remaining() : Number.POSITIVE_INFINITY
  }

  #arm(now: number): void {
    this.#clear()
    this.#armedAt = now
    if (this.#upload !== undefined) this.#reading = this.#upload()
    const phase = this.state
    if (phase === 'queued' || phase === 'done') return
    const own = this.#limit(phase)
    // The deadline that enforces: the call's own, or, under a budget on trial
    // (an observe-only child of an enforcing one), the enforcing one above it,
    // which ends the call when it expires (it cancels the trial). Read off the
    // trial alone, a phase limit past that expiry was armed as if nothing
    // bounded it, and one due with it failed as the phase's timeout, not the
    // deadline's expiry.
    const enforced = this.#enforced()
    const remaining = enforced ? this.#left(enforced, now) : Number.POSITIVE_INFINITY
    if (own <= 0 || own >= remaining) {
      // The deadline (or nothing) bounds this phase, and will until it ends
      // — unless it is disposed first (express disposes the request's as
      // its response ends; `using`): it then never expires, and a phase
      // left to it had no bound at all. A server that never answered, or
      // went silent mid-body, held the call, its socket and its attempt for
      // good, where under no deadline its own limit fails it. So one timer
      // at that limit stays armed behind the deadline (`#backstop`), never
      // re-armed per chunk; the deadline ends the phase first while it lasts.
      this.#untimed = true
      if (own > 0) {
        this.#movedUntimed = false
        this.#sentAt = now
        this.#timer = this.init.clock.setTimeout(() => this.#backstop(phase, own), own)
      }
      return
    }
    // Timed again (the deadline disposed, a reader resuming after it):
    // each chunk re-arms the timer from here on, or it cut a flowing body.
    this.#untimed = false
    this.#timer = this.init.clock.setTimeout(() => {
      this.#timer = undefined
      if (this.#uploadMoved()) {
        this.#arm(this.init.clock.now())
        return
      }
      const error = this.#raiseTimeout(phase, own)
      // One found never to end (`#overdue`) reads expired, yet bounds nothing.
      const left =
        enforced === undefined || enforced === this.#neverEnds
          ? Number.POSITIVE_INFINITY
          : enforced.remaining()
      this.abort(left <= TIE_MS ? this.deadlineError(error) : error)
    }, own)
  }

  /** The phase's timeout error, raised by this attempt's own timer: kept as `ownTimeout`. */
  #raiseTimeout(phase: EgressPhase, own: number): Error {
    const Timeout = TIMEOUTS[phase]
    const error = new Timeout({
      elapsedMs: this.elapsed(),
      bytesReceived: this.bytesReceived,
      limitMs: own,
      cause: undefined,
    })
    this.ownTimeout = error
    return error
  }

  /**
   * The phase's own limit has passed while the deadline bounded it. A
   * deadline that still does has ended the attempt or is about to (its
   * timer due with this one): the phase is judged again. One disposed
   * since no longer bounds it: a phase silent for its whole limit — nothing
   * received, the last piece of the request sent that long ago — fails as
   * it would under no deadline, and one sent later is looked at again when
   * its limit is up; else (a chunk came, the upload moved) its limit counts
   * from now, re-armed by each chunk as any timed phase's (never early:
   * when the last chunk came is not known).
   */
  #backstop(phase: EgressPhase, own: number): void {
    this.#timer = undefined
    if (this.state !== phase) return
    const now = this.init.clock.now()
    // Disposed, it reads as a deadline that never expires: no time left to bound by.
    const enforced = this.#enforced()
    // Ended, and this attempt never heard it: a trial disposed after its
    // observed expiry is no longer its parent's child, and the attempt
    // listens to the trial alone. Ended by it now, as its timed twin is.
    if (enforced?.done === true && enforced.reason !== undefined) {
      this.abort(enforced.reason)
      return
    }
    if (enforced !== undefined && this.#overdue(enforced, now, phase, own)) return
    const left = enforced ? this.#left(enforced, now) : Number.POSITIVE_INFINITY
    if (left === Number.POSITIVE_INFINITY && !this.#movedUntimed && !this.#uploadMoved()) {
      const quietMs = now - this.#sentAt
      if (quietMs < own) {
        this.#timer = this.init.clock.setTimeout(() => this.#backstop(phase, own), own - quietMs)
        return
      }
      this.abort(this.#raiseTimeout(phase, own))
      return
    }
    this.#arm(now)
  }

  /**
   * The deadline has no time left, yet has not ended this attempt. Its
   * timer may just be due with this one (a tie, a busy loop): it is given
   * `TIE_MS` to run first, and true is returned while it waits. Still not
   * ended after it, the deadline was disposed after its time passed but
   * before its timer ran (express disposes the request's as a response
   * that finished late ends): core keeps it reading expired, yet it never
   * ends. It is then read as a deadline with no expiry (`#neverEnds`), or
   * the phase was untimed again at each look and its call held for good.
   */
  #overdue(enforced: Deadline, now: number, phase: EgressPhase, own: number): boolean {
    if (enforced === this.#neverEnds || enforced.done || this.#left(enforced, now) > 0) return false
    this.#dueSeenAt ??= now
    if (now - this.#dueSeenAt < TIE_MS) {
      this.#timer = this.init.clock.setTimeout(() => this.#backstop(phase, own), TIE_MS)
      return true
    }
    this.#neverEnds = enforced
    return false
  }

  /**
   * Part of the upload left Node for the kernel since the last look (or more
   * of it was written): the server is reading, not silent. Either way is
   * bounded — undici waits for the socket to drain before it writes more —
   * so a peer that stopped reading is failed a look or two later. Once
   * nothing is left in Node, the limit counts the server's silence, while
   * it reads what the kernel's buffers still hold too (out of our sight).
   */
  #uploadMoved(): boolean {
    if (this.#upload === undefined || this.state !== 'headers') return false
    const reading = this.#upload()
    return reading !== undefined && reading !== this.#reading
  }

  #limit(phase: EgressPhase): number {
    if (this.#phaseLimit !== undefined) return this.#phaseLimit
    const limits = this.init.limits
    if (phase === 'dns') return limits.dnsTimeoutMs
    if (phase === 'connect') return limits.connectTimeoutMs
    if (phase === 'headers') return limits.headersTimeoutMs
    return limits.bodyTimeoutMs
  }

  #clear(): void {
    if (this.#timer !== undefined) {
      this.init.clock.clearTimeout(this.#timer)
      this.#timer = undefined
    }
  }

  /** What the deadline leaves at `now` (our clock): read off its expiry when it runs on our clock. */
  #left(deadline: Deadline, now: number): number {
    if (deadline === this.#neverEnds) return Number.POSITIVE_INFINITY
    if (deadline.clock !== this.init.clock) return deadline.remaining()
    return Math.max(0, deadline.expiresAt - now)
  }

  /** A silence in the body ended at `now` (a chunk, a pause, the end): keep it if it is the longest. */
  #endGap(now: number): void {
    const ms = now - this.#gapFrom
    if (ms > (this.timings.bodyGapMs ?? 0)) this.timings.bodyGapMs = ms
    this.#gapFrom = now
  }

  #closeTiming(now: number): void {
    const phase = this.state
    if (phase === 'queued' || phase === 'done') return
    const ms = now - this.#phaseStart
    if (phase === 'dns') this.timings.dnsMs = ms
    else if (phase === 'connect') this.timings.connectMs = ms
    else if (phase === 'headers') this.timings.headersMs = ms
    else this.timings.bodyMs = ms
  }
}

/**
 * The caller cancelled `body` (fetch's cancel closes the stream, then stops
 * the request): closed, not errored. A Response collected unread is
 * cancelled by undici, not by the caller (`BODY_NOT_READ`).
 */
function cancelled(body: ReadableStream<unknown>, error: unknown): boolean {
  return (
    !(error instanceof BodyNotReadError) && !isReadable(body as never) && !isErrored(body as never)
  )
}

/**
 * `reason` is a deadline's end, not a caller's choice to stop: the end of
 * `deadline` or of one above it — its expiry, or its cancel with whatever
 * reason (the client left, a server's shutdown) — or any deadline's expiry
 * (a `DeadlineExceededError`, whichever signal carried it), as
 * @hourglass/llm tells its own attempts' stops. Known by identity: a signal
 * that follows the deadline (a caller's own signal linked to
 * `deadline.signal`, llm's per attempt, a parent's: it aborts before the deadline below it is
 * cancelled) aborts with the deadline's reason as it is, and undici's
 * `request()` given the deadline's own signal stops the request with it
 * before the deadline's `onDone` reaches the attempt. Each said
 * `stoppedBy: 'caller'`: a body the deadline cut read as one its caller
 * chose to stop (no failure on its egress span, no retry-skipped), where
 * the same deadline given as `deadline` alone said it failed.
 */
function endsDeadline(deadline: Deadline | undefined, reason: unknown): boolean {
  if (isDeadlineExceeded(reason)) return true
  if (reason === undefined) return false
  for (let d = deadline; d !== undefined; d = d.parent) {
    if (d.done && d.reason === reason) return true
  }
  return false
}

function phaseOf(error: unknown, fallback: string | undefined): string | undefined {
  const phase = fieldOf(error, 'phase')
  return typeof phase === 'string' ? phase : fallback
}

/**
 * `signal` is `deadline.signal`, asked without reading `deadline.signal`
 * (its first read makes an AbortController). A deadline from an older
 * copy of core (two installed versions share one context) lacks
 * `ownsSignal`, and is compared the old way.
 */
function isDeadlineSignal(deadline: Deadline | undefined, signal: AbortSignal): boolean {
  if (deadline === undefined) return false
  return typeof deadline.ownsSignal === 'function'
    ? deadline.ownsSignal(signal)
    : signal === deadline.signal
}
