// Node's own, not the global: fake timers replace the global one (`#halfClose`).
import { setImmediate, setTimeout } from 'node:timers'
import {
  type FullResponder,
  Metadata,
  type ServerInterceptingCallInterface,
  type ServerListener,
  type ServerMethodDefinition,
  status,
} from '@grpc/grpc-js'
import {
  ClientClosedError,
  DEADLINE_EXPIRED_HEADER,
  Deadline,
  DeadlineExceededError,
  type DeadlineSource,
  defaultReserveMs,
  type InvalidDeadlineHeader,
  isCallersBudget,
  isDeadlineExceeded,
  KNOWN_DEADLINE_SOURCES,
  type ReadDeadlineResult,
  readDeadline,
  recordAnswerLateness,
  runWithDeadline,
} from '@hourglass/core'
import {
  type GrpcServerEndMessage,
  type GrpcServerExpireMessage,
  type GrpcServerLateWriteMessage,
  grpcChannels,
} from './channels.js'
import { attachDeadline } from './deadlineOf.js'
import { type ExpiredBudget, expiredStatus } from './expiredStatus.js'
import { metadataHeaders } from './metadataHeaders.js'
import type { ResolvedServerOptions } from './serverOptions.js'
import { markUnboundedStream } from './unboundedStream.js'

const NONE: readonly never[] = []

type SentStatus = Parameters<FullResponder['sendStatus']>[0]

/** How long past a turn a client-streaming or bidi call's half-close is held (see #halfClose). */
const HALF_CLOSE_HOLD_MS = 5

/** How early grpc-js's own deadline timer may fire against the wall clock, ms. */
const GRPC_TIMER_SLACK_MS = 5

/**
 * One inbound call's life under its deadline — the gRPC twin of
 * @hourglass/express's `IngressRequest`: arrival, the handler running inside
 * the deadline, `DEADLINE_EXCEEDED` when it runs out, the client leaving, and
 * the release of the timer when the call is over.
 *
 * It sits in the interceptor chain as a listener (inbound events) and a
 * responder (outbound ones). grpc-js calls the handler synchronously from the
 * listener chain — in `onReceiveHalfClose` for unary and server-streaming
 * methods, in `onReceiveMetadata` for the others — and delivers stream data
 * the same way, so running each `next` inside `runWithDeadline` puts the
 * whole handler, and everything it starts, in the one context.
 */
export class ServerCall {
  readonly #method: ServerMethodDefinition<unknown, unknown>
  readonly #call: ServerInterceptingCallInterface
  readonly #options: ResolvedServerOptions
  #deadline: Deadline | undefined
  #budgetMs = 0
  #reserveMs = 0
  /** Whole ms from the call's arrival to our interceptor, taken off the budget, for the `DEADLINE_EXCEEDED` details. */
  #heldMs = 0
  /** Those ms were an interceptor before ours holding the metadata (not work in the call's first turn). */
  #held = false
  /** The turn the call arrived in is over: metadata reaching us now was held. */
  #turnOver = false
  /** How the budget was read, for the `DEADLINE_EXCEEDED` details. */
  #read: ReadDeadlineResult | undefined
  /** Deadline headers the call sent that `trust` leaves out (looked for only when `defaultMs` was used). */
  #untrusted: readonly DeadlineSource[] = NONE
  #arriving = false
  #expiredOnArrival = false
  /** The handler will never see this call: refused or expired on arrival. */
  #closed = false
  /** The deadline answered: whatever the handler sends now is late. */
  #answered = false
  /** A unary response is on its way: the answer is given, even if its status is not out yet. */
  #responding = false
  #code: number | undefined
  /**
   * When the deadline our own timer answered was due, on its clock: how late
   * that answer went out feeds the adaptive reserve (see #recordAnswer).
   */
  #timedOutAt: number | undefined
  /** A message of the handler's went out: a status after it waits for it (see #recordAnswer). */
  #streamed = false
  #outcome: GrpcServerEndMessage['outcome'] = 'ok'
  #finished = false
  /** grpc-js told us the call was cancelled (the client's reset, its connection gone, grpc-js's own timer). */
  #cancelled = false
  /** A client-streaming or bidi call's half-close, held a turn (see #halfClose). */
  #heldHalfClose: (() => void) | undefined
  /** The handler sent its status: a half-close now is no cancel's (see #halfClose). */
  #handlerAnswered = false
  /**
   * The handler's answer was given (a unary response, else its status) after
   * the caller's budget ran out, before the deadline's timer had a turn (see
   * #judgeLate); undefined until it is given.
   */
  #lateAnswer: boolean | undefined
  /** When the call arrived, on the deadline's clock. */
  readonly #arrivedAt: number
  /** The same instant on the wall clock, which grpc-js's deadline is on. */
  readonly #arrivedWallMs: number

  constructor(
    method: ServerMethodDefinition<unknown, unknown>,
    call: ServerInterceptingCallInterface,
    options: ResolvedServerOptions,
  ) {
    this.#method = method
    this.#call = call
    this.#options = options
    // Built by the interceptor's factory, which grpc-js calls as the call
    // arrives (its stream opened), before any interceptor's listener runs.
    this.#arrivedAt = options.clock.now()
    this.#arrivedWallMs = Date.now()
    // grpc-js runs the factory and every interceptor's metadata listener in
    // one turn unless one of them holds the metadata (an auth check's
    // await): only then did the call wait before reaching ours.
    queueMicrotask(() => {
      this.#turnOver = true
    })
  }

  readonly listener: ServerListener = {
    onReceiveMetadata: (metadata, next) => this.#arrive(metadata, next),
    onReceiveMessage: (message, next) => this.#inContext(() => next(message)),
    onReceiveHalfClose: (next) => this.#halfClose(next),
    onCancel: () => this.#onCancel(),
  }

  readonly responder: Partial<FullResponder> = {
    sendMetadata: (metadata, next) => {
      // Swallowed without a report: grpc-js sends metadata by itself before a
      // handler's first message, and that message is reported.
      if (!this.#answered) next(metadata)
    },
    sendMessage: (message, next) => {
      if (this.#answered) {
        this.#late('sendMessage')
        return
      }
      if (!this.#method.responseStream) {
        this.#responding = true
        this.#judgeLate()
      }
      this.#streamed = true
      next(message)
    },
    sendStatus: (sent, next) => {
      if (this.#answered) {
        this.#late('sendStatus')
        return
      }
      this.#judgeLate()
      this.#code ??= sent.code
      this.#handlerAnswered = true
      // Before the status: grpc-js ends the call after it and, a tick later,
      // tells us (onCancel) and drops whatever is passed on from then on.
      // A handler that answers on the client's last message, in the turn
      // its half-close came, lost it: a bidi stream's `end` never fired,
      // and a `for await` over the call rejected ERR_STREAM_PREMATURE_CLOSE
      // (unhandled, the server crashed). A status sent before anything was
      // written goes out trailers-only and grpc-js ends the stream the next
      // tick, before a released half-close's `end` fires (README, step 5).
      this.#releaseHalfClose()
      next(this.#withoutCallersMark(sent))
      // After it is handed on: the deadline's cancel runs abort listeners,
      // and the handler's answer was given before any of them.
      this.#reportLate()
    },
  }

  /**
   * Whether the handler's answer comes after the caller's budget ran out,
   * before the deadline's timer had a turn: the loop was busy (the
   * handler's own synchronous work, or another call's) past the deadline,
   * and the answer was given in the turn that ended the stall, its timer
   * still pending. Judged once, as the answer is given — a unary response's
   * message (grpc-js sends its status only once that is written: a tick
   * later, or as long as the client's flow control holds it, by when the
   * timer may have run and found it on its way, see #expire), else the
   * status — and against the caller's budget, not the handler's deadline,
   * which ends `reserveMs` before it: an answer given inside the reserve
   * reached the caller in time.
   */
  #judgeLate(): void {
    const deadline = this.#deadline
    if (this.#lateAnswer !== undefined || deadline === undefined) return
    this.#lateAnswer =
      !this.#finished &&
      this.#outcome === 'ok' &&
      !deadline.done &&
      deadline.expired &&
      deadline.clock.now() - this.#arrivedAt >= this.#budgetMs
  }

  /**
   * A late answer of the handler's (see #judgeLate), reported as its status
   * goes out: it goes out as written — `DEADLINE_EXCEEDED` could not have
   * been on time either — but it was reported `ok`, no `server-expire`: a
   * busy process's late answers were counted as answers in time, in dark
   * mode too, whose expiry is its timer's. Enforced, the call ends
   * `expired` and the deadline is cancelled with a DeadlineExceededError, as
   * its timer would have ended it, so work still running for the call
   * stops; in dark mode it is `observed`, the outcome unchanged.
   */
  #reportLate(): void {
    const deadline = this.#deadline
    if (this.#lateAnswer !== true || deadline === undefined) return
    this.#lateAnswer = false
    if (this.#finished || this.#outcome !== 'ok') return
    const elapsedMs = deadline.elapsed()
    const observe = this.#options.observe
    if (!observe) {
      this.#outcome = 'expired'
      deadline.cancel(new DeadlineExceededError({ budgetMs: deadline.budgetMs, elapsedMs }))
    }
    grpcChannels.serverExpire.publish(() => ({
      deadline,
      method: this.#method.path,
      budgetMs: this.#budgetMs,
      elapsedMs,
      stage: 'handler',
      action: observe ? 'observed' : 'late',
    }))
  }

  /**
   * A status of the handler's that says the caller's budget is gone (the
   * `x-deadline-expired` trailer: `deadlineErrors()` answering the handler's
   * deadline, or a backend's status relayed by hand) on a call whose budget
   * was this server's own cap (`maxMs` cut what it sent, or `defaultMs`):
   * the caller's may have most of its time left, so the mark goes, as our
   * own answer leaves it out (core's `isCallersBudget`). Not in observe mode:
   * dark mode never changes an answer.
   */
  #withoutCallersMark(sent: SentStatus): SentStatus {
    const metadata = sent.metadata
    const read = this.#read
    if (this.#options.observe || read === undefined || isCallersBudget(read) || !metadata)
      return sent
    if (metadata.get(DEADLINE_EXPIRED_HEADER).length === 0) return sent
    const kept = metadata.clone()
    kept.remove(DEADLINE_EXPIRED_HEADER)
    return { ...sent, metadata: kept }
  }

  #arrive(metadata: Metadata, next: (metadata: Metadata) => void): void {
    // The call ended while an interceptor before ours held this (reported
    // then, see #onCancel): grpc-js passes nothing on after that, and were it
    // to, the handler must not run nor the call be reported twice.
    if (this.#finished) return
    // Metadata that reaches us after the turn the call arrived in was held
    // (an auth check's await); in that turn it was not: its ms (a first
    // call's loading, a synchronous check) are named otherwise, not as a
    // wait that sends an operator after an auth check that is not there.
    this.#held = this.#turnOver
    const options = this.#options
    const read = this.#readBudget(metadata)
    if (read.invalid.length > 0) {
      grpcChannels.serverInvalidHeader.publish(() => ({
        method: this.#method.path,
        invalid: read.invalid,
      }))
    }
    // A refused call gets its deadline and its start and end events like any
    // other: a tracer that saw nothing of it could not show why it failed.
    // In observe mode `strict` reports only (the event above), as
    // deadline()'s does: dark mode measures and never changes an answer.
    const refused = read.invalid.length > 0 && options.strict === true && !options.observe
    const deadline = this.#start(metadata, read, refused)
    if (refused) {
      this.#refuse(read.invalid, deadline)
      return
    }
    if (this.#expiredOnArrival) {
      this.#expire('arrival')
      if (this.#answered) {
        this.#closed = true
        return
      }
    }
    runWithDeadline(deadline, () => next(metadata))
  }

  /** The call's budget, from `metadata` and grpc-js's deadline, as the call arrived. */
  #readBudget(metadata: Metadata): ReadDeadlineResult {
    const options = this.#options
    const headers = metadataHeaders(metadata, this.#call.getDeadline(), this.#arrivedWallMs)
    const read = readDeadline(headers, { maxMs: options.maxMs, sources: options.trust })
    // A server-streaming or bidi call with no deadline (a watch, a
    // subscription: long-lived by design, and sent none by our own client)
    // gets none either, only the client's cancel: `defaultMs` ended every
    // such stream after 2 s. A unary or client-streaming call gets it.
    this.#budgetMs =
      read.ms ?? (this.#method.responseStream ? Number.POSITIVE_INFINITY : options.defaultMs)
    this.#read = read
    // Read now, before a handler can pass this metadata on: a header the call
    // sent that is not trusted is why it got the default, not "it sent none".
    // (A stream sent none never expires: nothing to explain.)
    if (read.ms === undefined && !this.#method.responseStream) {
      this.#untrusted = KNOWN_DEADLINE_SOURCES.filter(
        (header) => !options.trust.includes(header) && headers.get(header) !== null,
      )
    }
    return read
  }

  /** The call's deadline, from the budget `#readBudget` read, and its `server-start`. */
  #start(metadata: Metadata, read: ReadDeadlineResult, refused: boolean): Deadline {
    const options = this.#options
    this.#arriving = true
    this.#reserveMs = options.reserveMs ?? defaultReserveMs(options.clock)
    // Every budget is as the call arrived with it (grpc-timeout included,
    // see metadataHeaders), and counts from then. An async interceptor
    // before ours (an auth check) may have held the metadata meanwhile:
    // read here as if just sent, `x-deadline-remaining-ms: 400` after a
    // 250 ms check gave the handler 400 ms more, and its caller waited 650.
    // Whole ms, as the budgets are: grpc-js hands an unheld call's metadata
    // on in the same tick, and a handler gets exactly `budget − reserveMs`.
    const spentMs = this.#sinceArrival()
    this.#heldMs = spentMs
    const deadline = Deadline.after(this.#budgetMs - this.#reserveMs - spentMs, {
      clock: options.clock,
      observe: options.observe,
      onExpire: () => {
        // An empty budget expires inside Deadline.after, before anything is
        // wired up: arrival answers for it.
        if (this.#arriving) this.#expiredOnArrival = true
        else this.#expire('handler')
      },
    })
    this.#arriving = false
    this.#deadline = deadline
    if (this.#budgetMs === Number.POSITIVE_INFINITY) markUnboundedStream(deadline)
    if (!refused) attachDeadline(metadata, deadline)
    grpcChannels.serverStart.publish(() => ({
      deadline,
      method: this.#method.path,
      budgetMs: this.#budgetMs,
      remainingMs: deadline.remaining(),
      // A stream that came with none got none: labelled `default`, a tracer
      // read it as `defaultMs` having bounded a watch that nothing bounds.
      source:
        read.source ?? (read.ms === undefined && this.#method.responseStream ? 'none' : 'default'),
      clamped: read.clamped,
      mode: options.observe ? 'observe' : 'enforce',
      refused,
      metadata,
    }))
    return deadline
  }

  /**
   * The call ended before its metadata reached us: an async interceptor
   * before ours (an auth check) held it past grpc-js's deadline, or until the
   * client cancelled. The handler never runs (grpc-js drops the metadata when
   * it is passed on), but the call happened: a tracer or a meter that never
   * saw it would miss exactly the calls the check made too slow. Its start
   * has what can be known without the metadata, which was never ours to
   * read: an empty one in its place, and the budget `grpc-timeout` gave (the
   * one source grpc-js keeps outside it), else `defaultMs`.
   */
  #startUnarrived(): Deadline {
    this.#closed = true
    const metadata = new Metadata()
    return this.#start(metadata, this.#readBudget(metadata), false)
  }

  /** Whole ms since the call arrived, on the deadline's clock. */
  #sinceArrival(): number {
    return Math.max(0, Math.floor(this.#options.clock.now() - this.#arrivedAt))
  }

  /** `strict`: malformed deadline metadata is the caller's bug; say which header and why. The handler never runs. */
  #refuse(invalid: readonly InvalidDeadlineHeader[], deadline: Deadline): void {
    this.#closed = true
    this.#outcome = 'refused'
    this.#code = status.INVALID_ARGUMENT
    // Straight to the next call: our own responder would take it for the handler's.
    this.#call.sendStatus({
      code: status.INVALID_ARGUMENT,
      details: `invalid deadline metadata: ${invalid
        .map(({ header, reason }) => `${header}: ${reason}`)
        .join('; ')}`,
    })
    this.#finish(deadline)
  }

  /**
   * The client's half-close: for a unary or server-streaming method, where
   * grpc-js calls the handler from it, at once; for a client-streaming or
   * bidi one, at the next turn of the event loop, and not at all if the
   * client cancelled meanwhile. A Node HTTP/2 client that cancels (a grpc-js
   * `call.cancel()`, its deadline) ends its side of the stream before it
   * resets it (grpc/grpc-node#2583): both frames come in one read, and
   * grpc-js handed the half-close on first, as the stream's `end`. An upload
   * cancelled half-way then looked complete: a `for await` over it finished
   * normally, `end` fired, and the handler stored the part it had as the
   * whole, then answered OK to a client long gone. By the next turn the
   * reset has been read, and the handler sees `cancelled` (and its deadline
   * cancelled with ClientClosedError) instead.
   * Only a cancel with no status of the handler's drops it: grpc-js calls
   * onCancel after every call, a tick after its status, so once the handler
   * has answered, a half-close held or arriving is handed on at once (the
   * status releases a held one, see the responder's sendStatus).
   * A turn is not enough: on a stream with nothing queued (an upload waiting
   * for its next chunk, then given up) Node's client writes the END_STREAM
   * and the RST_STREAM in two writes, 0.1–3 ms apart on loopback, and the
   * turn was often over before the reset was read: the upload was handed on
   * as complete (`end`) 9 times in 10 in one process, 1 in 5 across two.
   * Held `HALF_CLOSE_HOLD_MS` past the turn: a client-streaming or bidi
   * call whose handler answers only on `end` is answered that much later.
   * On the real loop, through `node:timers`' own `setImmediate` and `setTimeout`
   * (as ClientCall's): under an app test's fake timers, which replace the
   * global one, an upload's `end` never reached its handler until the test
   * moved fake time.
   */
  #halfClose(next: () => void): void {
    if (!this.#method.requestStream || this.#handlerAnswered) {
      this.#inContext(next)
      return
    }
    this.#heldHalfClose = next
    setImmediate(() => {
      if (this.#cancelled || this.#heldHalfClose === undefined) {
        this.#heldHalfClose = undefined
        return
      }
      setTimeout(() => {
        if (this.#cancelled) this.#heldHalfClose = undefined
        else this.#releaseHalfClose()
      }, HALF_CLOSE_HOLD_MS)
    })
  }

  #releaseHalfClose(): void {
    const next = this.#heldHalfClose
    if (next === undefined) return
    this.#heldHalfClose = undefined
    this.#inContext(next)
  }

  #inContext(fn: () => void): void {
    if (this.#closed) return
    const deadline = this.#deadline
    if (deadline) runWithDeadline(deadline, fn)
    else fn()
  }

  #expire(stage: GrpcServerExpireMessage['stage']): void {
    const deadline = this.#deadline
    // Already answered by the handler (a unary response being written counts).
    if (!deadline || this.#finished || this.#code !== undefined || this.#responding) return
    const elapsedMs = deadline.elapsed()
    let action: GrpcServerExpireMessage['action'] = 'observed'
    if (!this.#options.observe) {
      action = 'status'
      this.#answered = true
      this.#outcome = 'expired'
      this.#code = status.DEADLINE_EXCEEDED
      // Straight to the next call: our own responder would take it for the handler's.
      // The reason the handler's signal aborts with, so both say the same.
      const reason = isDeadlineExceeded(deadline.reason)
        ? deadline.reason
        : new DeadlineExceededError({ budgetMs: deadline.budgetMs, elapsedMs })
      const read = this.#read
      const budget: ExpiredBudget = {
        ms: this.#budgetMs,
        source: read?.source,
        clamped: read?.clamped ?? false,
        invalid: read?.invalid ?? NONE,
        untrusted: this.#untrusted,
        heldMs: this.#heldMs,
        held: this.#held,
      }
      this.#call.sendStatus(expiredStatus(reason, budget, this.#reserveMs))
      // Our timer's answer to a handler still at work, as deadline()'s 504
      // is measured; not one on arrival (no timer of ours was late), nor on
      // a clock that moves when told (a ManualClock: a test's time).
      if (stage === 'handler' && deadline.clock.realTime === true) {
        this.#timedOutAt = deadline.expiresAt
      }
      // The deadline has expired already, so its signal aborted before this
      // status went out: work done for the call is being stopped.
    }
    grpcChannels.serverExpire.publish(() => ({
      deadline,
      method: this.#method.path,
      budgetMs: this.#budgetMs,
      elapsedMs,
      stage,
      action,
    }))
  }

  #late(operation: GrpcServerLateWriteMessage['operation']): void {
    grpcChannels.serverLateWrite.publish(() => ({ method: this.#method.path, operation }))
  }

  /**
   * grpc-js calls `onCancel` once a call is over, however it ended: after a
   * status was sent (by the handler or by us), when the client cancelled,
   * when the connection dropped, and when grpc-js's own `grpc-timeout` timer
   * answered. A status that went through us says which.
   */
  #onCancel(): void {
    this.#cancelled = true
    if (this.#finished) return
    const unarrived = this.#deadline === undefined
    // grpc-js arms a plain timer for its deadline, and timers can fire up to
    // a few ms before the wall clock reaches it (whole-ms rounding): within
    // that slack, a call ended without a status is grpc-js's timeout.
    const grpcDeadline = this.#call.getDeadline()
    const grpcExpired =
      Date.now() + GRPC_TIMER_SLACK_MS >=
      (grpcDeadline instanceof Date ? grpcDeadline.getTime() : grpcDeadline)
    // An interceptor before ours answered the call itself (an auth check's
    // UNAUTHENTICATED) and never passed it on: its status does not pass
    // through us, and its stream is still there (a client's reset or a
    // dropped connection takes it). Nobody cancelled, no deadline of ours
    // was involved, and ours cannot tell what was answered: not reported.
    // Taken for the client leaving, every refused token was a
    // `client-cancelled` CANCELLED call, counted as a caller that left.
    if (unarrived && !grpcExpired && this.#streamIntact()) {
      this.#finished = true
      return
    }
    const deadline = this.#deadline ?? this.#startUnarrived()
    // Since the call arrived: a deadline started just now has nothing to say.
    const elapsedMs = unarrived ? this.#sinceArrival() : deadline.elapsed()
    if (this.#code === undefined || this.#answerLost()) {
      // The handler never ran: its time ran out before the call reached it.
      const stage = unarrived ? 'arrival' : 'handler'
      // An observed expiry answered nothing: a cancel after it is the client's.
      if (grpcExpired || (deadline.expired && !deadline.observe)) {
        // grpc-js's own grpc-timeout timer answered: with reserveMs 0 it races
        // ours, and with grpc-timeout not trusted it is the only one due.
        this.#outcome = 'expired'
        this.#code = status.DEADLINE_EXCEEDED
        deadline.cancel(new DeadlineExceededError({ budgetMs: this.#budgetMs, elapsedMs }))
        grpcChannels.serverExpire.publish(() => ({
          deadline,
          method: this.#method.path,
          budgetMs: this.#budgetMs,
          elapsedMs,
          stage,
          action: 'status',
        }))
      } else {
        // Dark mode, out of time before it reached us: observed, as an
        // arrived call's expiry is, before the client left.
        if (unarrived && this.#expiredOnArrival) {
          grpcChannels.serverExpire.publish(() => ({
            deadline,
            method: this.#method.path,
            budgetMs: this.#budgetMs,
            elapsedMs,
            stage,
            action: 'observed',
          }))
        }
        // Nobody is left to answer: stop everything done on the caller's behalf.
        this.#outcome = 'client-cancelled'
        this.#code = status.CANCELLED
        deadline.cancel(
          new ClientClosedError(
            'the client cancelled the gRPC call, or its connection closed, before it was answered',
          ),
        )
        grpcChannels.serverClientCancelled.publish(() => ({
          deadline,
          method: this.#method.path,
          elapsedMs,
        }))
      }
    }
    this.#recordAnswer(deadline)
    this.#finish(deadline, elapsedMs)
  }

  /**
   * How late after its deadline our own `DEADLINE_EXCEEDED` went out, for
   * core's adaptive reserve (`recordAnswerLateness`), as @hourglass/express
   * reports each 504 its timer wrote: grpc-js tells us the call is over once
   * it has handed the status to HTTP/2. Nothing recorded a gRPC server's
   * answers: in a process without an Express server the reserve never saw a
   * status held up behind a busy loop, though `reserveMs` is documented to
   * learn from this server's last timeout answers.
   * Not after a message of the handler's: its status waits until those are
   * written, on the client's flow control — a client that stopped reading
   * held it until grpc-js's own timer ended the call, a wait no reserve can
   * cover and no lateness of this process (as deadline() leaves out a 504
   * queued behind another response). Nor when the client reset the call
   * first (its stream is gone, see #answerLost).
   */
  #recordAnswer(deadline: Deadline): void {
    const due = this.#timedOutAt
    if (due === undefined || this.#streamed) return
    this.#timedOutAt = undefined
    if (!this.#streamGone()) recordAnswerLateness(deadline.clock.now() - due)
  }

  /**
   * The handler answered, but its status never went out: the client reset
   * the stream first. A grpc-js client that cancels sends END_STREAM before
   * its RST_STREAM, so a streaming handler is handed an `end`, not a
   * `cancelled` (grpc/grpc-node#2583), and one that answers on `end` (an
   * echo) sends OK just before the reset arrives; grpc-js then drops the
   * status and the client sees CANCELLED. Interceptors are not told. What
   * shows it is the stream: destroyed by the time onCancel runs (Node
   * detaches a destroyed stream from its session, and grpc-js's `getPeer()`
   * turns 'unknown'), whereas after a status that was written onCancel runs
   * before the stream can close. A peer with no address (a Unix socket) is
   * 'unknown' from the start: its answers count as given. The half-close
   * of a cancel is no longer handed on when the reset comes in the same read
   * (#halfClose). Not caught: a half-close and a reset read apart, the
   * stream idle. The answer to the half-close goes out at once and onCancel
   * runs before the reset is read; the private HTTP/2 stream's rstCode would
   * show it only when the reset beats the answer's close, which it often
   * does not (tried: a bidi echo closed clean, code 0).
   */
  #answerLost(): boolean {
    return this.#outcome === 'ok' && this.#streamGone()
  }

  /** The call's HTTP/2 stream is gone, reset by the client (see #answerLost). */
  #streamGone(): boolean {
    return (
      this.#call.getConnectionInfo().remoteAddress !== undefined &&
      this.#call.getPeer() === 'unknown'
    )
  }

  /**
   * The call's HTTP/2 stream is still there as the call ends: a status was
   * written on it, not a reset. Unknown over a Unix socket, whose peer has
   * no address from the start (see #answerLost): not said then.
   */
  #streamIntact(): boolean {
    return (
      this.#call.getConnectionInfo().remoteAddress !== undefined &&
      this.#call.getPeer() !== 'unknown'
    )
  }

  #finish(deadline: Deadline, elapsedMs = deadline.elapsed()): void {
    this.#finished = true
    // Released, not aborted: work the handler leaves running on purpose after answering goes on.
    deadline.dispose()
    grpcChannels.serverEnd.publish(() => ({
      deadline,
      method: this.#method.path,
      code: this.#code ?? status.OK,
      elapsedMs,
      outcome: this.#outcome,
    }))
  }
}
