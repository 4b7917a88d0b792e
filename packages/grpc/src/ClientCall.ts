// Node's own, not the global: see `#cancelledBelow`.
import { setImmediate } from 'node:timers'
import {
  InterceptingCall,
  type InterceptorOptions,
  type Listener,
  Metadata,
  type NextCall,
  propagate,
  type Requester,
  type StatusObject,
  status,
} from '@grpc/grpc-js'
import {
  boundingDeadline,
  type ContextSnapshot,
  captureContext,
  DEADLINE_EXPIRED_HEADER,
  DEADLINE_HEADER,
  type Deadline,
  DeadlineExceededError,
  describeValue,
  expiryError,
  isDeadlineExceeded,
  MAX_RESERVE_MS,
  MAX_TIMER_MS,
  markExpiryOf,
  markForeignExpiry,
  messageOf,
  runInContext,
  systemClock,
} from '@hourglass/core'
import { type GrpcClientEndMessage, grpcChannels } from './channels.js'
import { channelTarget } from './channelTarget.js'
import type { ResolvedClientOptions } from './clientOptions.js'
import { type Turn, thisTurn } from './eventLoopTurn.js'
import { withoutForwardedDeadlines, withoutForwardedGrpcTimeout } from './forwardedDeadlines.js'
import { withReason } from './fromGrpcError.js'
import { outsideCallersContext } from './outsideCallersContext.js'
import { isReleased } from './releasedDeadline.js'
import { isUnboundedStream } from './unboundedStream.js'

type NextCallResult = ReturnType<NextCall>

/**
 * How much sooner than the caller's deadline grpc-js's own timer for the same
 * instant may fire, ms. grpc-js arms a plain timer on the wall clock's whole
 * ms (up to 1 ms early, measured); core's deadline never fires early. Well
 * above that, a DEADLINE_EXCEEDED is another's (the server's) and goes on at once.
 */
const GRPC_TIMER_SLACK_MS = 5

/**
 * One outbound call under the caller's deadline: the gRPC deadline it is
 * given, the `x-deadline-remaining-ms` it carries, the cancel when the
 * caller's deadline ends, and the release of that hook when the call ends.
 * Or, with no budget left, a call that fails at once and is never sent.
 * Or, with no deadline at all, a unary or client-streaming call given
 * `defaultMs` as its gRPC deadline.
 */
export class ClientCall {
  readonly #deadline: Deadline | undefined
  readonly #options: ResolvedClientOptions
  readonly #method: string
  readonly #startedAt = systemClock.now()
  #budgetMs = Number.POSITIVE_INFINITY
  /** The gRPC deadline given, epoch ms (NaN: an own one that is no time; Infinity: none). */
  #givenEpochMs = Number.POSITIVE_INFINITY
  /** The call's own deadline option, epoch ms (Infinity: none). */
  #ownEpochMs = Number.POSITIVE_INFINITY
  /** The gRPC deadline the caller's deadline gave the call, epoch ms (Infinity: none). */
  #callersEpochMs = Number.POSITIVE_INFINITY
  #next: NextCallResult | undefined
  #off: (() => void) | undefined
  #cancelReason: unknown
  #ended = false
  /** The gRPC deadline given is the caller's (not the call's own, nor `defaultMs`). */
  #callersDeadline = false
  /**
   * The call is given a finite gRPC deadline: grpc-js then writes its own
   * `grpc-timeout` over one in the metadata (see #withHeader).
   */
  #sendsGrpcTimeout = false
  /**
   * The deadline that enforces for the caller's (`boundingDeadline`): itself,
   * or, under a budget on trial, the nearest enforcing one above it.
   */
  #enforcer: Deadline | undefined
  /** grpc-js's status is in, held until the caller's deadline ends. */
  #holding = false
  /** The listener above ours, given at start: #cancel may have to deliver the status itself. */
  #caller: { onReceiveStatus(status: StatusObject): void } | undefined
  /** A cancel passed down before ours was started (see #cancelledBelow). */
  #cancelledBeforeStart: StatusObject | undefined
  /** Write callbacks passed down and not yet called (see `switchable`). */
  #pendingWrites: Set<() => void> | undefined
  /** The turn of the event loop the call was started in (see #passCancel). */
  #startTurn: Turn | undefined
  /** Its channel's target (see `channelTarget`), read as it is sent; undefined for one never sent. */
  #target: string | undefined
  /**
   * What the caller ran in when it made the call (grpc-js runs interceptors
   * synchronously in the client method): its answer is delivered in it.
   */
  readonly #context: ContextSnapshot = captureContext()

  constructor(options: ResolvedClientOptions, method: string, deadline: Deadline | undefined) {
    this.#options = options
    this.#method = method
    this.#deadline = deadline
  }

  /**
   * Run a delivery to the caller in the context it made the call in. grpc-js
   * hands a response up from the channel's HTTP/2 session, which keeps the
   * context of the call that opened the connection: a server stream's
   * status, and with it its `end`, `status` and `close` events, ran under
   * that earlier call's deadline — another request's, expired or released —
   * so an outbound call made from `call.on('end')` was refused at once or
   * sent with that request's budget. As an `await` resumes in the context
   * that awaited.
   */
  #inCallersContext(deliver: () => void): void {
    runInContext(this.#context, deliver)
  }

  /** The `InterceptingCall` the interceptor returns. */
  intercept(callOptions: InterceptorOptions, nextCall: NextCall): InterceptingCall {
    // grpc-js refuses a `deadline` that is neither a Date nor a number when
    // it creates the call, synchronously, where the caller can see it. Mixed
    // with ours (Math.min coerces it: a string to NaN, `true` to 1970) it
    // became a call failed DEADLINE_EXCEEDED at once, or, on a connected
    // channel, grpc-js's "Deadline is too far in the future" thrown where
    // nothing catches it: the process crashed. Refused here the same way.
    const ownOption: unknown = callOptions.deadline
    if (
      ownOption !== undefined &&
      ownOption !== null &&
      typeof ownOption !== 'number' &&
      !(ownOption instanceof Date)
    ) {
      throw new TypeError(
        `deadlineInterceptor: the call's deadline option must be a Date or a number of epoch ms, got ${describeValue(ownOption)}`,
      )
    }
    const refusal = this.#refusal()
    if (refusal) return this.#refuse(refusal)
    // A `parent` server call's deadline, which grpc-js gives the call below
    // (`propagate.DEADLINE`, in the default flags), is a deadline of the
    // call's own: the call has one, and it bounds the call. Unseen here, a
    // child of a parent with 60 s and no Hourglass deadline current (a server
    // without ours, a callback that lost the context) was given `defaultMs`
    // (30 s) over it.
    const asked = toEpochMs(callOptions.deadline)
    const inherited = parentEpochMs(callOptions)
    const own = Math.min(inherited, asked)
    // A deadline of the call's own that is no time at all (an invalid Date,
    // NaN) compares false with everything: under the caller's deadline it
    // was kept, the call failed DEADLINE_EXCEEDED at once (or grpc-js threw
    // an unhandled "Deadline is too far in the future") and every event said
    // a NaN budget. The smallest valid deadline wins, as for headers; without
    // one of ours it is passed to grpc-js as given.
    // One further than grpc-js's server can read (see `wireSafeMs`) arrived
    // as a deadline long past: the call failed DEADLINE_EXCEEDED on arrival.
    // It is sent as the furthest deadline that server reads, never later than
    // the one asked for.
    const ownValid = Number.isNaN(own) ? Number.POSITIVE_INFINITY : wireSafeDeadline(own)
    this.#ownEpochMs = ownValid
    let given = ownValid === own || Number.isNaN(own) ? own : ownValid
    const deadline = this.#deadline
    // A server stream's deadline with no expiry (it came with none) carries
    // only its client's cancel: a call made under it has no deadline at all.
    // Taken for a caller's `Deadline.never()`, a unary call a watch handler
    // made went out with none and waited as long as its server did. So does
    // one made under a deadline its ingress released when its call or
    // request was over (see `isReleased`). Not an observe-only one: dark mode
    // adds no gRPC deadline, `defaultMs` included.
    const unbounded =
      deadline !== undefined &&
      !deadline.observe &&
      (isUnboundedStream(deadline) || isReleased(deadline))
    // Dark mode propagates the header but adds no deadline of ours to the
    // call (enforcing it here would change outcomes); the call's own is sent
    // as above, wire-safe, in every mode. A budget on trial (an observe-only
    // child of an enforcing deadline) is bounded by the enforcing one above
    // it, which ends it when it expires: the call gets that one's gRPC
    // deadline, as under it. It got none, and a server that reads only
    // grpc-timeout took its own default.
    const enforcer = boundingDeadline(deadline)
    this.#enforcer = enforcer
    if (enforcer && !unbounded) {
      const left = enforcer.remaining() - this.#options.reserveMs
      // Beyond 2^31-1 ms (~24.8 days) grpc-js's server reads grpc-timeout
      // into an int32 and wraps it to a deadline already past: no gRPC
      // deadline of ours then, as grpc-js itself does for one that far.
      if (Number.isFinite(left) && left <= MAX_TIMER_MS) {
        const callers = Date.now() + wireSafeMs(left)
        this.#callersDeadline = callers < ownValid
        this.#callersEpochMs = callers
        given = Math.min(ownValid, callers)
      }
    } else if (
      (!deadline || unbounded) &&
      ownValid === Number.POSITIVE_INFINITY &&
      this.#options.defaultMs !== Number.POSITIVE_INFINITY &&
      !callOptions.method_definition.responseStream
    ) {
      // No deadline anywhere: a call that waits for one answer (unary,
      // client-streaming) would hang as long as its server does. It gets
      // `defaultMs` as its gRPC deadline, so grpc-js ends it DEADLINE_EXCEEDED
      // and the server reads the same budget from grpc-timeout. A response
      // stream (a subscription, a watch) is long-lived by design: none.
      given = Date.now() + wireSafeMs(this.#options.defaultMs)
    }
    this.#givenEpochMs = given
    this.#budgetMs = this.#budgetFromNow()
    this.#sendsGrpcTimeout = Number.isFinite(given)
    const nextOptions = given === own ? callOptions : { ...callOptions, deadline: given }
    // The call below is made when first needed (at start), not here: grpc-js
    // arms its deadline timer when it makes a call, and only ending the call
    // clears it. An interceptor before ours that answers without starting
    // ours (an open circuit breaker, a cache hit) left that call made and
    // never ended: one live timer per call (`defaultMs`, or what the caller
    // had left), each holding the process open — a CLI waited 30 s to exit.
    // The deadline given is absolute: made later, it ends at the same instant.
    // What our InterceptingCall starts: the call below, or, for a call
    // refused at start (see there), `unsent`; undefined until made.
    let below: NextCallResult | undefined
    // A parent whose call was over when this one was created (see start).
    const parentOverAtCreation = callOptions.parent?.cancelled === true
    const made = (): NextCallResult => {
      if (below === undefined) {
        below = outsideCallersContext(() => nextCall(nextOptions))
        this.#next = below
      }
      return below
    }
    // Within the client method's own call (its `start` follows at once) a
    // throw of grpc-js's as the call is made (a channel already closed)
    // reaches the caller where the call is written, as it did when the call
    // was made here. Later (an interceptor before ours held start), it would
    // land in that interceptor's callback, uncaught: the call fails instead.
    // Whichever of the two queues runs first: both were queued before any
    // interceptor's start, so this runs before a start held to either. A
    // microtask alone came after a start held to the next tick from a
    // macrotask (an I/O callback, a timer): the throw landed there.
    let sync = true
    const returned = () => {
      sync = false
    }
    queueMicrotask(returned)
    process.nextTick(returned)
    // A read asked for before the call below is made (grpc-js passes one
    // straight down, past a start held above: a stream read at once), given
    // to it once it is started, as grpc-js's own call keeps one for its start.
    // Made for it, a response stream an interceptor before ours answered
    // itself left the call made, timer and all.
    let readPending = false
    const requester: Requester = {
      // The caller's own `call.cancel()` meets the same grpc-js gap as ours (see #passCancel).
      cancel: (cancel) => this.#passCancel(cancel),
      start: (metadata, listener, start) => {
        // An async interceptor before ours (an auth token fetched first) may
        // hold start past the caller's deadline. Started anyway, the call
        // went out with no budget, and grpc-js's own timer for it had already
        // fired on a call with no listener yet: its status was lost and the
        // caller's callback never ran. Refused now, as at creation; no call
        // below is made (one made already is cancelled, see below).
        // Your `call.cancel()` while an interceptor before ours held start:
        // passed down to a call grpc-js had not started, it was dropped. It
        // came first, so it wins over a deadline that ended since (reported
        // as DEADLINE_EXCEEDED, an ingress answered it 504).
        const cancelled = this.#cancelledBeforeStart
        if (cancelled) {
          below = unsent
          this.#caller = listener
          this.#refuseCancelled(metadata, listener, start, cancelled)
          return
        }
        const late = this.#refusal()
        if (late !== undefined) {
          // One made already (an interceptor before ours asked its peer) is
          // cancelled (never started: it answers nobody), which releases
          // grpc-js's timer for it.
          below?.cancelWithStatus(codeFor(late), `not sent: ${messageOf(late)}`)
          below = unsent
          this.#refuseStart(metadata, listener, start, late)
          return
        }
        // grpc-js hears a parent's cancel (`parent`, with the default
        // propagate flags) from the moment it makes the call below: made
        // now, a cancel while start was held has already been and gone, and
        // the child went out for a parent nobody waits for. Refused as
        // grpc-js ends it (after a deadline of ours that ended: its reason
        // says more). Only an end that came after the call was created: a
        // parent over before it (grpc-js sets `cancelled` on every answer
        // too) is one grpc-js never hears either, and its child is sent.
        const parent = callOptions.parent
        if (
          !parentOverAtCreation &&
          parent?.cancelled === true &&
          ((callOptions.propagate_flags ?? propagate.DEFAULTS) & propagate.CANCELLATION) !== 0
        ) {
          // One made already (an interceptor before ours asked its peer) is
          // ended, as the refusal above ends it: its timer released.
          below?.cancelWithStatus(status.CANCELLED, 'Cancelled by parent call')
          below = unsent
          this.#caller = listener
          const byParent = {
            code: status.CANCELLED,
            details: 'Cancelled by parent call',
            metadata: new Metadata(),
          }
          this.#refuseCancelled(metadata, listener, start, byParent)
          return
        }
        // Before anything is published: a call that cannot be made has no start.
        let call: NextCallResult
        try {
          call = made()
        } catch (error) {
          if (sync) throw error
          below = unsent
          this.#ended = true
          start(metadata, {})
          // Published as every call not sent is (refused, no target), so a
          // tracer and the client error rate see the call its caller saw fail.
          this.#publishRefusedStart()
          queueMicrotask(() =>
            this.#inCallersContext(() => {
              this.#publishEnd(status.UNAVAILABLE, 'error')
              listener.onReceiveStatus({
                code: status.UNAVAILABLE,
                details: `not sent: ${messageOf(error)}`,
                metadata: new Metadata(),
              })
            }),
          )
          return
        }
        this.#caller = listener
        // Before it is started (see `channelTarget`), and only for a subscriber:
        // a tracer's `server.address`, on the call's span and its duration.
        if (grpcChannels.clientStart.hasSubscribers || grpcChannels.clientEnd.hasSubscribers) {
          this.#target = channelTarget(call)
        }
        // Read before the header is: the header, written from the time left
        // a moment later, is then never above the budget published with it.
        const budgetMs = this.#budgetFromNow()
        const sent = this.#withHeader(metadata)
        if (grpcChannels.clientStart.hasSubscribers) {
          // A subscriber may add to what is sent (a tracer's traceparent): on a copy.
          const outbound = sent.metadata === metadata ? metadata.clone() : sent.metadata
          sent.metadata = outbound
          grpcChannels.clientStart.publish(() => ({
            call: this,
            deadline,
            method: this.#method,
            // From now, as the header and remainingMs beside it: an
            // interceptor before ours that held start (an auth token
            // fetched for 10 s) made the budget measured at creation stale —
            // a call with 20 s left published as given 30 s.
            budgetMs,
            remainingMs: deadline ? deadline.remaining() : Number.POSITIVE_INFINITY,
            headerMs: sent.headerMs,
            refused: false,
            metadata: outbound,
            target: this.#target,
          }))
        }
        // Once #cancel has delivered the status itself (see there), nothing
        // the call below sends after it reaches the caller.
        // Each delivered in the caller's context (see #inCallersContext).
        const ending: Listener = {
          onReceiveMetadata: (received, pass) => {
            if (!this.#ended) this.#inCallersContext(() => pass(received))
          },
          onReceiveMessage: (message, pass) => {
            if (!this.#ended) this.#inCallersContext(() => pass(message))
          },
          onReceiveStatus: (ended, pass) => {
            if (this.#ended) return
            const deliver = () =>
              this.#inCallersContext(() => {
                pass(this.#end(ended))
                this.#completeWrites()
              })
            if (!this.#holdForCaller(ended, deliver)) deliver()
          },
        }
        this.#startTurn = thisTurn()
        start(sent.metadata, ending)
        // After start: a deadline that is already over cancels a started call.
        // Not for a call that ended inside start (an interceptor after ours
        // answered at once: a circuit breaker, a cache, a mock): #end has run
        // and released nothing, so the hook taken now stayed on the caller's
        // deadline for good — one per call on a long-lived one.
        if (deadline && !this.#ended) {
          this.#off = deadline.onDone((reason) => this.#cancel(reason))
        }
      },
    }
    const switchable: NextCallResult = {
      // Your `call.cancel()` (or an interceptor's above ours), passed on by #passCancel.
      cancelWithStatus: (code, details) => {
        // None made yet: none to cancel (start is refused, see there).
        below?.cancelWithStatus(code, details)
        this.#cancelledBelow(code, details)
      },
      // grpc-js answers its channel's target until the call is under way,
      // and an interceptor has no way to that channel: the call is made for
      // it (see the README).
      getPeer: () => made().getPeer(),
      start: (metadata, listener) => {
        const call = made()
        call.start(metadata, listener)
        if (readPending) call.startRead()
      },
      sendMessageWithContext: (context, message) => {
        const written = context.callback
        // Once the caller has its status (ours, see #deliverUnanswered, or
        // the call's), nothing below will complete a write: completed here,
        // not sent. On the next turn, not the next tick: a source that never
        // ends (a generator piped in) must not starve the event loop.
        if (this.#ended) {
          if (written) setImmediate(written)
          return
        }
        if (written === undefined) return made().sendMessageWithContext(context, message)
        // Tracked until below completes it, so #completeWrites can complete
        // one the call drops as it ends: held by an interceptor below until
        // its start, or, on a started call, waiting on HTTP/2 flow control
        // (a server not reading) — grpc-js never calls that one back.
        this.#pendingWrites ??= new Set()
        const pending = this.#pendingWrites
        const once = () => {
          if (!pending.delete(once)) return
          // In the caller's context (see #inCallersContext): grpc-js completes
          // a write from the call's HTTP/2 stream, made outside it.
          this.#inCallersContext(written)
        }
        pending.add(once)
        made().sendMessageWithContext({ ...context, callback: once }, message)
      },
      sendMessage: (message) => made().sendMessage(message),
      startRead: () => {
        if (below === undefined) readPending = true
        else below.startRead()
      },
      halfClose: () => made().halfClose(),
      // What grpc-js answers until the call is under way.
      getAuthContext: () => (below === undefined ? null : below.getAuthContext()),
    }
    return new InterceptingCall(switchable, requester)
  }

  /** The gRPC deadline given, in ms from now (Infinity: none). */
  #budgetFromNow(): number {
    const given = this.#givenEpochMs
    return Number.isNaN(given) ? Number.POSITIVE_INFINITY : Math.max(0, given - Date.now())
  }

  /** Why the call must not be sent, or undefined when there is time. */
  #refusal(): unknown {
    const deadline = this.#deadline
    if (!deadline) return undefined
    // Cancelled (the caller left), or expired and enforcing.
    if (deadline.done && deadline.reason !== undefined) return deadline.reason
    // The deadline that enforces: the caller's, or, under a budget on trial
    // (an observe-only child of an enforcing one), the nearest enforcing one
    // above it, which ends the trial when it expires. Dark mode throughout:
    // none, nothing refused by time.
    const bound = boundingDeadline(deadline)
    if (!bound) return undefined
    if (bound.done) return bound.reason
    const left = bound.remaining() - this.#options.reserveMs
    if (left > 0 && left >= this.#options.minBudgetMs) return undefined
    // The deadline's expiry, told early: an Express app answers it as the request's.
    return expiryError(bound)
  }

  /**
   * A call that is never sent: no channel call is created, nothing is
   * connected; the caller gets the status on the next microtask, as it
   * would from a call that failed.
   */
  #refuse(reason: unknown): InterceptingCall {
    const refused: Requester = {
      start: (metadata, listener, next) => this.#refuseStart(metadata, listener, next, reason),
      // On to `unsent`, which completes each write as not sent. Dropped here
      // (or held for a start that never came), a write's callback never ran,
      // so a client-streaming caller's end() never finished either: a writer
      // awaiting them (pipeline, drain) hung for good, where a call that
      // fails (UNAVAILABLE) completes its writes.
      sendMessage: (message, next) => next(message),
      halfClose: (next) => next(),
      cancel: () => {},
    }
    return new InterceptingCall(unsent, refused)
  }

  /**
   * Start a refused call: `next` starts `unsent` (it does nothing), so
   * grpc-js passes the caller's writes on to it rather than holding them
   * (one at a time) for a start that never came. The caller gets the status
   * on the next microtask.
   */
  #refuseStart(
    metadata: Metadata,
    listener: { onReceiveStatus(status: StatusObject): void },
    next: (metadata: Metadata, listener: Listener) => void,
    reason: unknown,
  ): void {
    this.#ended = true
    next(metadata, {})
    const code = codeFor(reason)
    this.#publishRefusedStart()
    const details =
      code === status.DEADLINE_EXCEEDED
        ? `not sent, no budget left: ${messageOf(reason)}`
        : `not sent, the caller's deadline was cancelled: ${messageOf(reason)}`
    // In the caller's context (see #inCallersContext): an interceptor before
    // ours that held start lets it go from its own (a token fetch shared by
    // the calls waiting on it: the first caller's), not this caller's.
    queueMicrotask(() =>
      this.#inCallersContext(() => {
        this.#publishEnd(code, 'refused')
        listener.onReceiveStatus(withReason({ code, details, metadata: new Metadata() }, reason))
      }),
    )
  }

  /** `client-start` for a call that is not sent: no budget, no header. */
  #publishRefusedStart(): void {
    const deadline = this.#deadline
    grpcChannels.clientStart.publish(() => ({
      call: this,
      deadline,
      method: this.#method,
      budgetMs: 0,
      remainingMs: deadline ? deadline.remaining() : Number.POSITIVE_INFINITY,
      headerMs: undefined,
      refused: true,
      metadata: undefined,
      target: undefined,
    }))
  }

  /** Start a call cancelled before it was started: never sent, the cancel's status on the next microtask. */
  #refuseCancelled(
    metadata: Metadata,
    listener: { onReceiveStatus(status: StatusObject): void },
    next: (metadata: Metadata, listener: Listener) => void,
    cancelled: StatusObject,
  ): void {
    next(metadata, {})
    this.#publishRefusedStart()
    this.#ended = true
    queueMicrotask(() =>
      this.#inCallersContext(() => listener.onReceiveStatus(this.#end(cancelled))),
    )
  }

  /** The caller's metadata plus what is left now, on a copy (a Metadata may be shared by calls). */
  #withHeader(metadata: Metadata): { metadata: Metadata; headerMs: number | undefined } {
    const deadline = this.#deadline
    if (!deadline) return { metadata, headerMs: undefined }
    // core's writeDeadline rule, less the reserve: the caller's deadline, or
    // under a budget on trial whose own time has passed, the nearest one
    // above it that enforces (or, observe-only, still has a whole ms past
    // the reserve). It sent none, the next hop took its own default, though
    // the request's deadline still bounded the work. With none above that
    // bounds it, its own, as before.
    const bound = boundingDeadline(deadline, this.#options.reserveMs + 1) ?? deadline
    let left = bound.remaining() - this.#options.reserveMs
    // A shorter deadline of the call's own is the budget it really has: a
    // server that reads only this header must not plan on the caller's longer one.
    if (this.#ownEpochMs - Date.now() < left) left = this.#ownEpochMs - Date.now()
    // No deadline of its own; or dark mode past its deadline (or within a
    // millisecond of it: "0" on the wire), which must not make the next hop
    // answer DEADLINE_EXCEEDED.
    // Nor any the caller's metadata brought along, whether or not one of
    // ours goes out: a handler forwarding its inbound metadata passed its own
    // caller's deadline headers on, stale (ours, Envoy's, an SDK's), and a
    // call exempted with Deadline.never(), or given a longer deadline than
    // that, was cut by the next hop to that caller's budget.
    // Nor a `grpc-timeout` it brought along, unless grpc-js writes its own
    // over it: it does only for a call given a finite gRPC deadline (what
    // `nextCall` was given: the same fact decides here). Decided on whether
    // our header goes out, it missed dark mode with time left and a deadline
    // beyond 2^31-1 ms (no gRPC deadline of ours either way): the stale 300m
    // went out as given, and grpc-js's server cut a call with 5 s, or 30
    // days, left to 300 ms. A call with a finite one costs nothing here.
    const forwarded = this.#sendsGrpcTimeout
      ? withoutForwardedDeadlines(metadata)
      : withoutForwardedGrpcTimeout(withoutForwardedDeadlines(metadata), metadata)
    if (!Number.isFinite(left) || (bound.observe && left < 1)) {
      return { metadata: forwarded, headerMs: undefined }
    }
    // Capped where readers stop accepting it (2^31-1 ms); they clamp to their own maxMs.
    const headerMs = Math.min(Math.max(0, Math.floor(left)), MAX_TIMER_MS)
    const copy = forwarded === metadata ? metadata.clone() : forwarded
    copy.set(DEADLINE_HEADER, String(headerMs))
    return { metadata: copy, headerMs }
  }

  #cancel(reason: unknown): void {
    if (this.#ended) return
    this.#cancelReason = reason
    // A held call is over already: only its reason is still to come.
    if (this.#holding) return
    const next = this.#next
    if (!next) return
    const code = codeFor(reason)
    const details = `cancelled: ${messageOf(reason)}`
    this.#passCancel(() => {
      next.cancelWithStatus(code, details)
      this.#cancelledBelow(code, details)
    })
  }

  /**
   * grpc-js answers the cancel of a call it has started on the next tick,
   * before the next turn. One an async interceptor after ours still holds
   * (an auth token being fetched) has no listener yet: grpc-js drops the
   * status, and the caller waited for good — a span never closed, a job
   * stayed active (grpc/grpc-node#1985). Not answered by the next turn, the
   * caller gets it from here; whatever comes up from below later is dropped
   * (see `ending`). A cancel before ours was started (an interceptor before
   * ours holds start) is kept for that start. The next turn of the real
   * loop, through `node:timers`' own `setImmediate` (as every turn here):
   * fake timers replace the global one, and the caller waited until the test
   * moved fake time.
   */
  #cancelledBelow(code: status, details: string): void {
    if (this.#ended) return
    if (this.#caller === undefined) {
      this.#cancelledBeforeStart ??= { code, details, metadata: new Metadata() }
      return
    }
    setImmediate(() => this.#deliverUnanswered(code, details))
  }

  #deliverUnanswered(code: status, details: string): void {
    const caller = this.#caller
    if (this.#ended || this.#holding || !caller) return
    this.#inCallersContext(() => {
      caller.onReceiveStatus(this.#end({ code, details, metadata: new Metadata() }))
      this.#completeWrites()
    })
  }

  /**
   * The caller has its status: complete the writes the call below still
   * holds. It drops them uncompleted — held by an interceptor below ours
   * whose start never came, or, on a started call, one waiting on HTTP/2
   * flow control (the server not reading) when the caller's deadline
   * cancelled the call, or the server answered early — and a
   * client-streaming or bidi caller's write callbacks, `'finish'` and a
   * `pipeline()` into it waited for good, its source held open.
   */
  #completeWrites(): void {
    for (const write of [...(this.#pendingWrites ?? [])]) process.nextTick(write)
  }

  /**
   * Pass a cancel on once: at once, or, within the turn of the event loop
   * the call was started in, on the next turn. grpc-js (1.14) makes the
   * stream it sends a few microtasks after `start` (its ResolvingCall
   * creates its child in a promise callback, without checking whether the
   * call ended meanwhile). A cancel in that window (a caller's deadline
   * cancelled, or a `call.cancel()`, in the same tick as the call) gave the
   * caller CANCELLED, yet the request went out anyway and was never reset:
   * the server ran the handler to the end for nobody. By the next turn the
   * stream exists and the cancel reaches it (RST_STREAM). It used to be sent
   * both at once and again on the next turn, every time: an interceptor after
   * ours (a retry, a metrics one) was asked to cancel every call twice.
   */
  #passCancel(cancel: () => void): void {
    if (this.#startTurn !== undefined && !this.#startTurn.over) setImmediate(cancel)
    else cancel()
  }

  /**
   * grpc-js's own timer for the caller's deadline fired a hair before that
   * deadline did: the call failed DEADLINE_EXCEEDED while the caller's
   * deadline was still live. Passed on as it is, the caller saw its call
   * ended by a deadline that had not ended — a BullMQ job's deadline
   * stopping its gRPC call was failed as an ordinary error, not as stopped
   * by its deadline, about one time in five. Hold the status until the
   * caller's deadline ends (at most a few ms: its timer is due), so the call
   * fails with that deadline's own reason, after it. Bounded on the
   * deadline's clock too: a deadline disposed meanwhile never ends.
   */
  #holdForCaller(ended: StatusObject, deliver: () => void): boolean {
    const deadline = this.#deadline
    // The one whose time the gRPC deadline is (a trial's enforcing parent).
    const enforcer = this.#enforcer
    if (
      !deadline ||
      !enforcer ||
      !this.#callersDeadline ||
      ended.code !== status.DEADLINE_EXCEEDED ||
      this.#cancelReason !== undefined ||
      enforcer.done
    ) {
      return false
    }
    const left = enforcer.remaining()
    if (left > GRPC_TIMER_SLACK_MS) return false
    this.#holding = true
    let released = false
    let off: (() => void) | undefined
    let timer: unknown
    const release = () => {
      if (released) return
      released = true
      off?.()
      enforcer.clock.clearTimeout(timer)
      deliver()
    }
    timer = enforcer.clock.setTimeout(release, Math.ceil(left) + GRPC_TIMER_SLACK_MS, {
      keepAlive: true,
    })
    // After the interceptor's own hook (#cancel), registered at start: the
    // reason is recorded before the status goes on. The caller's own (a
    // trial is cancelled with its enforcing parent's reason when it expires).
    off = deadline.onDone(release)
    return true
  }

  #end(ended: StatusObject): StatusObject {
    this.#ended = true
    this.#off?.()
    this.#off = undefined
    let reason = this.#cancelReason
    if (reason === undefined && ended.code === status.DEADLINE_EXCEEDED) {
      reason = new DeadlineExceededError({
        budgetMs: this.#budgetMs,
        elapsedMs: systemClock.now() - this.#startedAt,
        cause: { code: ended.code, details: ended.details },
      })
      // Under the gRPC deadline the caller's deadline set: that deadline's
      // expiry, told early (an Express app answers it as the request's). A
      // server's cap of its own, or a job's behind it, does not come back as
      // DEADLINE_EXCEEDED from a server with deadlineErrors() (it passes
      // such an error on: UNKNOWN), so what does is the caller's line's.
      // A trial's: its enforcing parent's, whose time the gRPC deadline was.
      const deadline = this.#enforcer ?? this.#deadline
      // Unless it came well before that gRPC deadline with no server saying
      // the caller's budget is gone (our server's `x-deadline-expired`
      // trailer, sent for a fixed `reserveMs` above MAX_RESERVE_MS too):
      // grpc-js's own cap below the interceptors (a service config's
      // `timeout`), or a server's answer by hand. Marked the caller's, an
      // Express app answered 504 `x-deadline-expired` 50 ms into a 60 s
      // request.
      if (this.#callersDeadline && deadline) {
        if (
          this.#callersEpochMs - Date.now() > MAX_RESERVE_MS &&
          ended.metadata?.get(DEADLINE_EXPIRED_HEADER).length === 0
        ) {
          markForeignExpiry(reason)
        } else markExpiryOf(reason, deadline)
      }
      // Under a shorter deadline of the call's own (a cap of the app's on
      // this call, as a `Deadline.after(100)` around it is), or `defaultMs`
      // under a deadline with no expiry (a stream's, or one released): not
      // the caller's, while the caller's still has its time. Unmarked, core
      // took it for the caller's own: a 504 `x-deadline-expired` 100 ms into
      // a 60 s request. Within the largest reserve of the caller's end it
      // leaves the caller no time either, and counts as its expiry (as
      // bullmq's fromJobError reads one).
      else if (deadline && !deadline.done && deadline.remaining() > MAX_RESERVE_MS)
        markForeignExpiry(reason)
    }
    this.#publishEnd(ended.code, outcomeOf(ended.code, this.#cancelReason))
    return reason === undefined ? ended : withReason(ended, reason)
  }

  #publishEnd(code: number, outcome: GrpcClientEndMessage['outcome']): void {
    grpcChannels.clientEnd.publish(() => ({
      call: this,
      deadline: this.#deadline,
      method: this.#method,
      code,
      elapsedMs: systemClock.now() - this.#startedAt,
      outcome,
      target: this.#target,
    }))
  }
}

/** The next call of a refused call: never started, so never used. */
const unsent: NextCallResult = {
  cancelWithStatus() {},
  getPeer: () => 'unknown',
  start() {},
  // Completed, not sent: the caller's write callback must run (see #refuse)
  // — on the next tick, as grpc-js completes a write: run at once, the
  // stream's buffer never filled and write() never said false, so a
  // "write until full" producer spun for good.
  sendMessageWithContext(context) {
    if (context.callback) process.nextTick(context.callback)
  },
  sendMessage() {},
  startRead() {},
  halfClose() {},
  getAuthContext: () => null,
}

function codeFor(reason: unknown): status {
  return isDeadlineExceeded(reason) ? status.DEADLINE_EXCEEDED : status.CANCELLED
}

function outcomeOf(code: number, cancelReason: unknown): GrpcClientEndMessage['outcome'] {
  if (code === status.OK) return 'ok'
  if (code === status.DEADLINE_EXCEEDED) return 'expired'
  if (cancelReason !== undefined && code === status.CANCELLED) return 'cancelled'
  return 'error'
}

/**
 * grpc-js writes `grpc-timeout` rounded up, in whole seconds from 10^8 ms
 * (8 digits of ms) on: just under 2^31-1 ms it sent `2147484S`, which its
 * server reads into an int32, wrapped to a deadline 24 days in the past (an
 * instant DEADLINE_EXCEEDED). Whole seconds rounded down there never exceed
 * what is left, nor that limit.
 */
function wireSafeMs(left: number): number {
  return left < 1e8 ? left : Math.floor(left / 1000) * 1000
}

/**
 * An epoch-ms deadline as grpc-js's server will read it: as it is when less
 * than 10^8 ms away (or past, or none); further, whole seconds rounded down,
 * at most 2^31-1 ms from now.
 */
function wireSafeDeadline(at: number): number {
  const now = Date.now()
  const left = at - now
  if (!Number.isFinite(left) || left < 1e8) return at
  return now + wireSafeMs(Math.min(left, MAX_TIMER_MS))
}

/**
 * The deadline a `parent` server call passes on to the call (grpc-js's
 * `propagate.DEADLINE`, in `propagate.DEFAULTS`), epoch ms; Infinity: none,
 * or a parent that does not say.
 */
function parentEpochMs(options: InterceptorOptions): number {
  const parent = options.parent
  if (!parent || ((options.propagate_flags ?? propagate.DEFAULTS) & propagate.DEADLINE) === 0) {
    return Number.POSITIVE_INFINITY
  }
  try {
    const at = toEpochMs(parent.getDeadline())
    return Number.isNaN(at) ? Number.POSITIVE_INFINITY : at
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

function toEpochMs(deadline: Date | number | null | undefined): number {
  // grpc-js reads a missing or null deadline as none (`deadline ?? Infinity`);
  // Math.min would take null for 0, a deadline in 1970.
  if (deadline === undefined || deadline === null) return Number.POSITIVE_INFINITY
  return deadline instanceof Date ? deadline.getTime() : deadline
}
