import {
  type Clock,
  currentDeadline,
  type Deadline,
  describeValue,
  enforcedRemaining,
  MAX_TIMER_MS,
  optionError,
  refuseUnknownOptions,
  untilEnded,
  wait,
} from '@hourglass/core'
import { assertMethods } from '../assertMethods.js'
import { callHook } from '../callHook.js'
import { clockOption } from '../clockOption.js'
import { KeysRetiredError } from '../errors/KeysRetiredError.js'
import { RateLimitedError } from '../errors/RateLimitedError.js'
import { DEFAULT_MAX_RETRY_AFTER_MS, hintSeconds } from '../retry/maxRetryAfter.js'
import type { RateLimitedBy } from '../types.js'
import { type AdmissionPermit, createPermit } from './AdmissionPermit.js'
import { CooldownBook, modelScope } from './CooldownBook.js'
import type { CooldownStore } from './CooldownStore.js'
import { checkAdmissionRequest } from './checkAdmissionRequest.js'
import { chooseSlot, type SlotChoice } from './chooseSlot.js'
import { type CooldownInput, defaultCooldownMs } from './defaultCooldownMs.js'
import { KeyIdCache } from './KeyIdCache.js'
import { endpointId } from './keyId.js'
import { LatencyTracker } from './LatencyTracker.js'
import { MemoryCooldownStore } from './MemoryCooldownStore.js'
import type { CountedDecision, ProviderLimits } from './ProviderLimits.js'
import { publishAdmission } from './publish.js'
import { RedisCooldownStore } from './RedisCooldownStore.js'
import {
  type AdmissionOutcome,
  byPlace,
  type Lane,
  type Place,
  type ProbeToken,
  type Slot,
  serverWaitMs,
} from './slot.js'
import { followerDelayMs, joinLine, leaveLine, mayProbe, onChange, passProbes } from './waitLine.js'

export interface AdmissionOptions {
  /** Where cooldowns live. Default: a `MemoryCooldownStore` on `clock` (this process only). */
  store?: CooldownStore | undefined
  /** Time source; must be the clock of the deadlines passed in. Default `systemClock`. */
  clock?: Clock | undefined
  /** Wall-clock ms for `retryAtMs` and event times. Default `Date.now`, the global read at each call. */
  wallClock?: (() => number) | undefined
  /** The wait when a limit comes without a hint, in ms. Default `defaultCooldownMs`. */
  cooldownMs?: ((input: CooldownInput) => number) | undefined
  /**
   * The longest cooldown a server's hint (`retryAfterMs`: `Retry-After`,
   * `retry-after-ms`, reset headers, Gemini's `retryDelay`) starts, in ms. A
   * hint beyond it cools for `maxRetryAfterMs`; then the half-open probe (one
   * request) finds out whether the limit still holds. Default 60000, as
   * @hourglass/fetch's and `callModel`'s `retry.maxRetryAfterMs`; a finite
   * number ≥ 0.
   */
  maxRetryAfterMs?: number | undefined
  /**
   * Waiters released by a successful probe follow in the order they came,
   * spread evenly over staggerMs (the first at once). Default 100; 0 = all at once.
   */
  staggerMs?: number | undefined
  /** Longest a probe may hold the slot without reporting, in ms (it also ends with its deadline). Default 30 000. */
  probeLeaseMs?: number | undefined
  /** Time a call is assumed to need before any latency was measured, in ms. Default 1000. */
  defaultNeededMs?: number | undefined
  /** Latency samples kept per provider (default 50) and the percentile used (default 0.9). */
  latencySamples?: number | undefined
  latencyPercentile?: number | undefined
  /** How long an auth failure retires a key, in ms. Default Infinity (until restart); 0 = never retire. */
  retireMs?: number | undefined
  /** Told once when the store fails (`warn`) and once when it is back (`info`, or `warn` for a logger without one). Default `console`. */
  logger?:
    | { warn(message: string): void; info?: ((message: string) => void) | undefined }
    | undefined
  /**
   * After a store command fails (a `commandTimeout` against a frozen Redis,
   * a lost connection), decide on this process's view for this long, in ms,
   * without asking the store; then one `acquire` (or one report's write,
   * whichever comes first) asks again (the others stay
   * local until it is answered). A frozen Redis then costs one command
   * timeout per back-off, not one per call. Reports still write through,
   * not waited for during the back-off; once it has run out, the first
   * write is the one retry (waited for), the others meanwhile are not.
   * 0 asks the store on every `acquire`. Default 1000 (as `ProviderLimits`'
   * `redisBackoffMs`), for a store of your own too: one that hangs then costs
   * one `storeTimeoutMs` per back-off, not one per call (the in-memory store
   * never fails, so it never backs off).
   */
  storeBackoffMs?: number | undefined
  /**
   * How long a store call (reading cooldowns, writing one) may go
   * unanswered, in ms on `clock`, before it counts as the store failing:
   * admission then decides on this process's view, as when the store
   * rejects, and says so once (`logger`). The late answer is dropped.
   * Default 1000 for a store of your own (a `CooldownStore` on another
   * database, a wrapper); none for `MemoryCooldownStore` (it answers at
   * once) and `RedisCooldownStore` (its `commandTimeoutMs` bounds it). A
   * wrapper around a store with a longer bound of its own sets at least
   * that. A number above 0; Infinity = none (the call's deadline and signal
   * still bound what it waits).
   */
  storeTimeoutMs?: number | undefined
  /** Random source in [0, 1) for jitter. Default `Math.random`, the global read at each call. */
  random?: (() => number) | undefined
  /**
   * Per-provider RPM/TPM limits (memory or Redis), taken after the cooldown
   * gate: a spent limit is waited for when its reset fits, else refused with
   * a `RateLimitedError` like a cooldown. Default: none.
   */
  limits?: ProviderLimits | undefined
}

/** One provider (at one endpoint) and its keys: what cools down together. */
export interface AdmissionTarget {
  provider: string
  /**
   * The provider's base URL. Two providers of one name at different URLs
   * cool down apart (and their latencies are kept apart). Default: none, one
   * cooldown per name.
   */
  endpoint?: string | undefined
  /** The provider's API keys, in order of preference. Empty or absent: one provider-wide cooldown. */
  keys?: readonly string[] | undefined
  /** The model: latencies are kept per model too (`forecast`), and errors name it. */
  model?: string | undefined
}

/** What this process knows of a target's next answer (see `Admission.forecast`). */
export interface AdmissionForecast {
  /** ms until a key may be used: 0 = now; Infinity = every key retired. */
  waitMs: number
  /**
   * ms until the provider's `ProviderLimits` window frees, when this
   * process's last count on it found it full (refused, or took its last
   * request); absent when none is known full. A free key still waits for
   * it: `callModel` expects a model's answer after the later of the two.
   */
  windowFullMs?: number | undefined
  /** The model's recent latency percentile (p90 by default), ms; undefined before its first success. */
  latencyMs: number | undefined
  /**
   * While it waits on keys cooling after rate limits: the limit their 429s
   * named, when they all named the same (what a refusal by those cooldowns
   * says: `RateLimitedError.limitedBy`); undefined otherwise, an overload's
   * cooldown included.
   */
  limitedBy?: RateLimitedBy | undefined
}

export interface AdmissionRequest extends AdmissionTarget {
  /** Bounds every wait. Default `currentDeadline()`; without either, waits are bounded by the cooldown only. */
  deadline?: Deadline | undefined
  /** Also ends a wait when aborted. */
  signal?: AbortSignal | undefined
  /**
   * Time the call needs once admitted, in ms. Default: recent latency
   * percentile, else `defaultNeededMs` — read again on every pass of a wait,
   * so the calls answered meanwhile count. A number given here stays as given.
   */
  neededMs?: number | undefined
  /**
   * The least the call needs once admitted, in ms, under the figure read on
   * each pass (callModel's `retry.minAttemptMs`): a floor, not a fixed
   * figure, so the calls answered meanwhile still count above it.
   */
  minNeededMs?: number | undefined
  /**
   * Longest wait worth taking, in ms — a caller with another model expected
   * to answer sooner says so here. A longer wait is refused at once, like one
   * that does not fit the deadline. Default: no limit but the deadline.
   */
  maxWaitMs?: number | undefined
  /**
   * The longest wait a server asked for (`Retry-After`, reset headers,
   * Gemini's `retryDelay`: the part of a cooldown its hint started) this
   * caller takes, in ms — `callModel` passes its `retry.maxRetryAfterMs`
   * (default 60 000). While every key is held longer by such a wait the
   * request is refused at once with a `RateLimitedError` ("the provider
   * asked for 30 s, beyond maxRetryAfterMs (5000 ms)"), as the call that met
   * the 429 did not sleep it either; a key held no longer is waited for
   * instead. Waits no server asked for (a backoff, an overload's, a
   * `ProviderLimits` window, a probe in flight) are not bounded by it.
   * Default: no limit but admission's own `maxRetryAfterMs`.
   */
  maxRetryAfterMs?: number | undefined
  /** The caller will fall back to another model when refused (reported as `fallback`, not `fail`). */
  hasFallback?: boolean | undefined
  /**
   * Whether the caller waits for an overload's cooldown (the provider-wide
   * one a 503/529 started, or its probe in flight). `false`: refused at once
   * with a `RateLimitedError` of kind `overloaded` — `callModel` passes it
   * under `retry.priority: 'background'`, which fails at once on an overload
   * instead of adding load: waiting, such a call was sent when the overload
   * ended, as the probe or among the first followers, ahead of the
   * foreground calls that came after it. Default `true`. @internal
   */
  waitsOnOverload?: boolean | undefined
  /**
   * The caller's models after this one weighed again, once a wait longer
   * than `maxWaitMs` is in view: its answer replaces `maxWaitMs` and
   * `hasFallback`. Called at most once per `acquire`, and never for a
   * request granted without a longer wait: `callModel` checks there, and
   * only there, which fallbacks can build the request (a healthy call builds
   * none). @internal
   */
  reweigh?: (() => { maxWaitMs: number | undefined; hasFallback: boolean }) | undefined
  /**
   * Tokens the request may use (prompt estimate + output cap): its weight
   * against a TPM limit. A function is called only when the provider has
   * one, so a call without limits pays nothing for it. Default 0.
   */
  tokens?: number | (() => number) | undefined
  /**
   * Since when this caller has been waiting for the provider (its call's
   * start), on the admission's clock: callers waiting on a cooldown go in
   * this order (the probe first, then the followers), so a call that comes
   * back after a 429 keeps its place. Default: now.
   */
  waitingSince?: number | undefined
}

/**
 * One cooldown per provider and key, shared by every call of the process (and
 * of the fleet, with a shared store). A call aimed at a cooling provider+key
 * never sends just to learn the limit still holds: it takes another free
 * key, or waits when the cooldown ends in time for the call to finish before
 * its deadline, or is refused at once with a `RateLimitedError` saying when
 * to retry. When a cooldown ends exactly one call probes; the rest follow
 * its success (staggered) or its failure (the cooldown grows, nobody sends).
 */
export class Admission {
  readonly #clock: Clock
  readonly #wall: () => number
  readonly #staggerMs: number
  readonly #probeLeaseMs: number
  readonly #defaultNeededMs: number
  readonly #random: () => number
  readonly #latency: LatencyTracker
  readonly #book: CooldownBook
  readonly #limits: ProviderLimits | undefined
  /** The cooldown store is this process's memory: its answer cannot hang, so it needs no bound. */
  readonly #storeIsLocal: boolean
  /** Key → id of the keys seen lately: at most `MAX_CACHED_KEY_IDS` raw keys held. */
  readonly #ids = new KeyIdCache()
  /** Numbers `acquire` calls in the order they came: the tie-break of the line (waitLine.ts). */
  #arrivals = 0
  /** The callers waiting for a limits window's reset, per provider and limit (`joinReset`). */
  readonly #resets = new Map<string, ResetLine>()

  constructor(options: AdmissionOptions = {}) {
    // Ignored, `storeTimeoutMS: 50` left the store's default timeout in force.
    refuseUnknownOptions(options, OPTION_NAMES, 'new Admission()')
    // NaN slips through every comparison: a NaN `defaultNeededMs` made every
    // wait on a cooldown a 0 ms wait, retried at once without end (the
    // process spun). Refused here, naming the option; negatives are clamped.
    for (const name of NUMERIC_OPTIONS) checkNumber('Admission', name, options[name])
    // Called only once a limit comes back, or a cooldown starts: a number
    // there (`cooldownMs: 5000`, as its name reads, or from the environment)
    // was accepted, and the first 429 without a hint ended its call with
    // "cooldownMs is not a function" — not retried, its fallback never
    // asked, the cooldown never set — and every such call after it alike.
    for (const [name, rule] of FUNCTION_OPTIONS) {
      const value = options[name]
      if (value !== undefined && value !== null && typeof value !== 'function') {
        throw new TypeError(`Admission: ${name} must be ${rule}, got ${describeValue(value)}`)
      }
    }
    // The limits themselves in its place (`limits: { openai: { rpm: 500 } }`,
    // ProviderLimits' own option) failed every call as "fullForMs is not a
    // function", naming neither the option nor what it takes.
    assertMethods(
      'Admission',
      'limits',
      options.limits,
      ['count', 'fullForMs'],
      'a ProviderLimits (new ProviderLimits({ limits: { openai: { rpm, tpm } } }))',
    )
    // Used only once a call reads or writes a cooldown: a store with no such
    // methods (`{}`, a Redis client given in place of its store) failed every
    // command, read as the store being down — warned, and never shared.
    assertMethods(
      'Admission',
      'store',
      options.store,
      ['remaining', 'extend'],
      'a CooldownStore (remaining and extend: a MemoryCooldownStore, a RedisCooldownStore)',
    )
    const { latencySamples, latencyPercentile, staggerMs } = options
    // Infinity put every caller that came while a probe was in flight an
    // infinite wait away: refused, "no retry helps", as the provider recovered.
    if (staggerMs !== undefined && staggerMs > MAX_TIMER_MS) {
      throw optionError('Admission: staggerMs', `a number of ms up to ${MAX_TIMER_MS}`, staggerMs)
    }
    // Infinity kept every latency for good: the ring grew with every answer
    // (each one a sorted insert into all the others), and `neededMs` was the
    // percentile of the process's whole history — 500 answers in 100 ms
    // after 20,000 in 5 s still read 5000 ms.
    if (latencySamples !== undefined && !Number.isFinite(latencySamples)) {
      throw optionError('Admission: latencySamples', 'a finite number of samples', latencySamples)
    }
    // Out of (0, 1] it was replaced by 0.9 without a word: `95`, meant as
    // p95, ran on p90.
    if (latencyPercentile !== undefined && !(latencyPercentile > 0 && latencyPercentile <= 1)) {
      throw optionError(
        'Admission: latencyPercentile',
        'a fraction in (0, 1] (0.95 for p95)',
        latencyPercentile,
      )
    }
    const { maxRetryAfterMs = DEFAULT_MAX_RETRY_AFTER_MS } = options
    // Not clamped like the others: Infinity (or a negative read as 0) would
    // quietly bring back — or remove — every hint's cooldown.
    if (
      typeof maxRetryAfterMs !== 'number' ||
      !(maxRetryAfterMs >= 0 && maxRetryAfterMs < Number.POSITIVE_INFINITY)
    ) {
      const message = `Admission: maxRetryAfterMs must be a finite number ≥ 0 (ms), got ${String(maxRetryAfterMs)}`
      throw typeof maxRetryAfterMs === 'number' ? new RangeError(message) : new TypeError(message)
    }
    // Refused here, as ProviderLimits and RedisCooldownStore refuse it.
    const clock = clockOption('Admission', options.clock)
    this.#clock = clock
    // The globals read at each call, as core's systemClock reads its own:
    // taken as they were when this admission was made (the process default
    // is made by a file's first callModel, an app's by its module's import),
    // fakes a test installed later (vi.useFakeTimers' Date, a spied
    // Math.random) never reached it — a refusal's retryAtMs years off the
    // faked now, a pinned jitter that did not pin.
    this.#wall = options.wallClock ?? (() => Date.now())
    this.#random = options.random ?? (() => Math.random())
    this.#staggerMs = Math.max(0, staggerMs ?? 100)
    this.#probeLeaseMs = Math.max(0, options.probeLeaseMs ?? 30_000)
    this.#defaultNeededMs = Math.max(0, options.defaultNeededMs ?? 1000)
    // Null is none, as for every option of an object built once (`clock: null`).
    this.#limits = options.limits ?? undefined
    this.#latency = new LatencyTracker({
      samples: latencySamples,
      percentile: latencyPercentile,
    })
    const store = options.store ?? new MemoryCooldownStore({ clock: this.#clock })
    this.#storeIsLocal = store instanceof MemoryCooldownStore
    // On by default for any store that brings no bound of its own: a
    // protection that must be switched on protects nobody, and a store that
    // never answers held every call without a deadline for good.
    const storeTimeoutMs =
      options.storeTimeoutMs ??
      (this.#storeIsLocal || store instanceof RedisCooldownStore
        ? Number.POSITIVE_INFINITY
        : DEFAULT_STORE_TIMEOUT_MS)
    if (typeof storeTimeoutMs !== 'number' || !(storeTimeoutMs > 0)) {
      throw optionError(
        'Admission: storeTimeoutMs',
        'a number of ms above 0 (Infinity = none)',
        storeTimeoutMs,
      )
    }
    this.#book = new CooldownBook({
      store,
      clock: this.#clock,
      wall: this.#wall,
      cooldownMs: options.cooldownMs ?? ((input) => defaultCooldownMs(input, this.#random)),
      retireMs: Math.max(0, options.retireMs ?? Number.POSITIVE_INFINITY),
      maxRetryAfterMs,
      latency: this.#latency,
      logger: options.logger ?? console,
      // Every store that can fail backs off by default: a store of the
      // user's that hung (0 for it, as once) cost every acquire a whole
      // `storeTimeoutMs`, where a frozen Redis costs one per back-off. A
      // wrapper that must see every command's outcome sets 0.
      storeBackoffMs: Math.min(
        Math.max(0, options.storeBackoffMs ?? DEFAULT_STORE_BACKOFF_MS),
        MAX_TIMER_MS,
      ),
      storeTimeoutMs,
    })
  }

  /** The time a call to `provider` (at `endpoint`) is expected to need, in ms (recent latency percentile). */
  neededMs(provider: string, endpoint?: string | undefined): number {
    return this.#latency.estimate(scopeOf(provider, endpoint)) ?? this.#defaultNeededMs
  }

  /**
   * What this process knows of `target`'s next answer, without waiting or
   * asking the store: how long until one of its keys may be used (a
   * cooldown, or a probe in flight) and the model's recent latency. A
   * caller with several models compares them with it (`callModel`: the
   * earliest expected answer wins).
   */
  forecast(target: AdmissionTarget): AdmissionForecast {
    const lanes = this.#lanesOf(target)
    const now = this.#clock.now()
    const choice = chooseSlot(
      lanes,
      now,
      this.neededMs(target.provider, target.endpoint),
      this.#staggerMs,
    )
    const scope = scopeOf(target.provider, target.endpoint)
    const latencyMs = this.#latency.estimate(
      target.model === undefined ? scope : modelScope(scope, target.model),
    )
    // A window of its `ProviderLimits` known full (this process's last
    // count on it found it so): the key is free, the request is not —
    // counted as answering at once, such a fallback drew calls away from a
    // primary free sooner, to wait there for the window's reset. A map
    // read, no round trip: every call's forecast of its fallbacks pays it.
    const fullMs = this.#limits?.fullForMs(target.provider) ?? 0
    const window = fullMs > 0 ? { windowFullMs: fullMs } : undefined
    if (choice.kind === 'grant') return { waitMs: 0, latencyMs, ...window }
    if (choice.kind !== 'wait') return { waitMs: Number.POSITIVE_INFINITY, latencyMs }
    // As a refusal by these cooldowns names its limit (acquire): a gateway
    // whose last key failed otherwise says which limit holds the one left.
    const overloaded = overloadHolds(lanes[choice.index] as Lane, now)
    return {
      ...window,
      waitMs: Math.max(0, choice.readyAt - now),
      latencyMs,
      limitedBy: overloaded ? undefined : coolingLimitedBy(lanes, now),
    }
  }

  /**
   * A permit to send now, after a wait that fits the deadline, or a rejection
   * at once: `RateLimitedError` (with `retryAfterMs`/`retryAtMs`) when every
   * key is cooling past the time left, `KeysRetiredError` when every key is
   * retired, or the deadline's/signal's reason if it ends during a wait.
   */
  async acquire(request: AdmissionRequest): Promise<AdmissionPermit> {
    checkAdmissionRequest(request)
    const { provider } = request
    // Before joining the line: a NaN `neededMs` or `maxWaitMs` makes every
    // comparison false — a cooldown was then waited for 0 ms, again and
    // again (the process spun), or past the caller's own cap.
    checkNumber('Admission.acquire', 'neededMs', request.neededMs)
    checkNumber('Admission.acquire', 'minNeededMs', request.minNeededMs)
    checkNumber('Admission.acquire', 'maxWaitMs', request.maxWaitMs)
    checkNumber('Admission.acquire', 'maxRetryAfterMs', request.maxRetryAfterMs)
    checkNumber('Admission.acquire', 'waitingSince', request.waitingSince)
    if (typeof request.tokens !== 'function') {
      checkNumber('Admission.acquire', 'tokens', request.tokens)
    }
    const deadline = request.deadline ?? currentDeadline()
    const clock = deadline?.clock ?? this.#clock
    const keys = keysOf(request)
    const lanes = this.#lanesOf(request)
    // Every slot any lane goes through, once: what is refreshed, watched and queued on.
    const slots = [...new Set(lanes.flat())]
    const { signal } = request
    // Waits end at once with the deadline's or the signal's reason (core's one wait).
    const until = { deadline, signal, clock }
    const ended = () => {
      signal?.throwIfAborted()
      if (deadline?.done && deadline.reason !== undefined) throw deadline.reason
    }
    let maxWaitMs = Math.max(0, request.maxWaitMs ?? Number.POSITIVE_INFINITY)
    const maxRetryAfterMs = Math.max(0, request.maxRetryAfterMs ?? Number.POSITIVE_INFINITY)
    let hasFallback = request.hasFallback
    let reweigh = request.reweigh
    // A wait longer than the caller takes is in view: its models weighed again, once.
    const weighAgain = (): void => {
      if (reweigh === undefined) return
      const again = reweigh()
      reweigh = undefined
      checkNumber('Admission.acquire', 'maxWaitMs', again.maxWaitMs)
      maxWaitMs = Math.max(0, again.maxWaitMs ?? Number.POSITIVE_INFINITY)
      hasFallback = again.hasFallback
    }
    const startedAt = this.#clock.now()
    const place: Place = {
      since: request.waitingSince ?? startedAt,
      arrival: ++this.#arrivals,
      lanes,
    }
    let seen = slots.map((slot) => slot.reopened)
    // Whether this request was held back (a cooldown, a probe, the stagger, a
    // limit's window): only then is the time since it came a wait. A grant on
    // the first pass took only the store's round trip (and whatever pause the
    // process had), which a record must not call a wait for the limits.
    let heldBack = false
    // Woken for a request given back to the RPM window (room for one, the
    // first waiter's alone): handed on unless this call counts again.
    let owedRoom = false
    const handOn = () => {
      if (!owedRoom) return
      owedRoom = false
      this.#limits?.passOn(provider)
    }

    joinLine(slots, place)
    try {
      for (;;) {
        ended()
        // Bounded by the deadline and the signal: a store that does not
        // answer (Redis down behind a queueing client) must not hold the call.
        // A store in memory answers at once: no bound on every call's path
        // (~3 µs each).
        const refreshed = this.#book.refresh(slots)
        await (this.#storeIsLocal ? refreshed : untilEnded(refreshed, until))
        ended()
        const now = this.#clock.now()
        // Read on every pass, not once when the call joined the line: calls
        // answered while this one waited measured the provider's latency.
        // Fixed at the 1000 ms default of a provider not yet measured, a
        // waiter was refused a window reset that left it ample time.
        const neededMs = Math.max(
          0,
          request.neededMs ??
            Math.max(request.minNeededMs ?? 0, this.neededMs(provider, request.endpoint)),
        )
        let choice = chooseSlot(lanes, now, neededMs, this.#staggerMs)
        if (choice.kind === 'grant') {
          // Released by a probe's success: the followers go in the order they
          // came, spread over staggerMs instead of stampeding (waitLine.ts).
          // Once per reopening, not once per acquire: a follower still in its
          // stagger when an earlier one met the limit again waits out the new
          // cooldown, and the next probe's success released every such
          // follower in the same instant (10 of 10 at +0 ms).
          const chosen = lanes[choice.index] as Lane
          const opened = slots.find((slot, i) => slot.reopened !== seen[i] && chosen.includes(slot))
          seen = slots.map((s) => s.reopened)
          if (opened !== undefined && this.#staggerMs > 0) {
            const spreadMs = followerDelayMs(opened, place, this.#staggerMs)
            const left = startWithinMs(enforcedRemaining(deadline), neededMs)
            const jitterMs = Math.min(spreadMs, Math.max(0, left))
            if (jitterMs >= 1) {
              heldBack = true
              handOn()
              await wait(jitterMs, until)
              continue
            }
          }
          const lane = lanes[choice.index] as Lane
          const slot = lane[0] as Slot
          if (choice.probe && !lane.every((s) => !s.halfOpen || mayProbe(s, place, now))) {
            // Somebody waiting longer sends the probe; wait for it with the rest.
            seen = slots.map((s) => s.reopened)
            heldBack = true
            handOn()
            // A probe kept for it on another slot stays kept: handed on here,
            // the next in line kept it for this caller again (it can go) and
            // woke it, which handed it on again — two waiters passing one
            // probe back and forth without end, the event loop never turning.
            await wait(Math.min(this.#probeLeaseMs, MAX_TIMER_MS), {
              ...until,
              wakeOn: (wake) => onChange(slots, wake, place),
            })
            continue
          }
          // What the limits counted for this request, given back if it is not sent (`release`).
          let giveBack: (() => Promise<void>) | undefined
          if (this.#limits !== undefined) {
            // Cooldowns first (nothing is counted against a limit for a
            // request that cannot go), then the provider's RPM/TPM share.
            let weight = 0
            const tokens = () => {
              const { tokens: given } = request
              weight = typeof given === 'function' ? given() : (given ?? 0)
              return weight
            }
            // Bounded too: a Redis that holds the counters' commands (paused,
            // or dying with the command in flight) must not hold the call.
            // The room it was woken for is this count's: taken, taken by
            // another first, or handed on by its give-back when TPM refuses it.
            owedRoom = false
            // The window's reset is `waitMs` after it counted, not after its
            // answer came (a Redis round trip, a busy loop): what the reset
            // line (`wakeOlder`) tells one reset by. Read after, a caller
            // whose answer came late looked due later than the reset, and
            // the caller it was waiting ahead of took the window.
            const countedAt = clock.now()
            const counted = this.#limits.count(provider, tokens, { deadline, neededMs })
            let limit: CountedDecision
            try {
              limit = await (this.#limits.remote ? untilEnded(counted, until) : counted)
              ended()
            } catch (stopped) {
              // The call ended while its count was in flight (or as it was
              // answered): nothing goes out, so what it took goes back once
              // it is answered. Kept, a tenant whose clients hung up during
              // a slow Redis held the TPM limit with requests never sent.
              counted.then((taken) => (taken.admitted ? taken.giveBack?.() : undefined)).catch(noop)
              throw stopped
            }
            if (!limit.admitted) {
              const waitMs = limit.retryAfterMs
              const remaining = enforcedRemaining(deadline)
              if (limit.fitsDeadline && waitMs > maxWaitMs) weighAgain()
              if (!limit.fitsDeadline || waitMs > maxWaitMs) {
                publishAdmission({
                  provider,
                  keyId: slot.keyId,
                  action: hasFallback ? 'fallback' : 'fail',
                  cause: limit.limit,
                  waitMs,
                })
                // No wait helps: the limits say which limit (the whole one,
                // or this process's share while Redis is down) and by how much.
                const why = !Number.isFinite(waitMs)
                  ? (limit.reason ??
                    `the request alone (${Math.ceil(weight)} tokens) exceeds the ${limit.limit.toUpperCase()} limit`)
                  : waitMs > maxWaitMs && limit.fitsDeadline
                    ? `the caller takes waits of at most ${Math.floor(maxWaitMs)} ms`
                    : `the ${limit.limit.toUpperCase()} window resets in ${Math.ceil(waitMs)} ms; ${Math.floor(remaining)} ms left, ${Math.ceil(neededMs)} ms needed`
                throw new RateLimitedError({
                  provider,
                  model: request.model,
                  limit: limit.limit,
                  ...(limit.tooLarge
                    ? { kind: 'request_too_large' as const, overLimit: limit.overLimit }
                    : {}),
                  retryAfterMs: waitMs,
                  // On this admission's wall clock, as a cooldown's refusal
                  // dates it (the limits' own is `Date.now`'s).
                  retryAtMs: this.#wall() + waitMs,
                  reason: why,
                })
              }
              publishAdmission({
                provider,
                keyId: slot.keyId,
                action: 'wait',
                cause: limit.limit,
                waitMs,
              })
              // A metrics hook must not change admission (a rejecting async one neither).
              callHook(this.#limits.onWait, provider, limit.limit, waitMs)
              heldBack = true
              // Waiting for a window, not for a probe: one kept for it goes on
              // down the line, and none is kept for it until it looks again.
              // Kept, a caller waiting a minute for a TPM reset held the
              // half-open probe, and every smaller request that fitted waited
              // with it (to its deadline) after the cooldown had ended.
              place.waitingForWindow = true
              passProbes(slots, place)
              // Woken early when a count is given back (a request not sent):
              // room before the reset, which this caller asleep until the
              // reset (up to a whole window) left unused.
              const limits = this.#limits
              // The callers waiting for this reset count again in line order
              // (the longest waiting first, as on a cooldown's line): each on
              // its own timer, they counted in whatever order their timers
              // fired — a newcomer whose timer was due a fraction of a ms
              // sooner took the window, and a caller waiting since the first
              // window was refused at its deadline while later ones went.
              const line = `${provider}\0${limit.limit}`
              const dueAt = countedAt + Math.min(waitMs, MAX_TIMER_MS)
              // Woken by the reset line, not by a request given back: no
              // room is owed on (`handOn`), none was given.
              let byReset = false
              let woke: Awaited<ReturnType<typeof wait>>
              try {
                woke = await wait(Math.min(waitMs, MAX_TIMER_MS), {
                  ...until,
                  wakeOn: (wake) => {
                    const offRoom = limits.onRoom(provider, limit.limit, wake, limit.roomSeen)
                    const offReset = joinReset(this.#resets, line, {
                      place,
                      dueAt,
                      left: false,
                      wake: () => {
                        byReset = true
                        wake()
                      },
                    })
                    return () => {
                      offRoom()
                      offReset()
                    }
                  },
                })
              } finally {
                place.waitingForWindow = false
              }
              owedRoom = woke === 'woken' && !byReset && limit.limit === 'rpm'
              // At the reset: the callers before it in line that wait for the
              // same reset are woken first, and count before it.
              if (woke === 'timer' && wakeOlder(this.#resets, line, place, clock.now())) {
                await Promise.resolve()
              }
              continue
            }
            // The lanes as they are now, not as they were before the
            // count's round trip: a 429 reported meanwhile (a cooldown), a
            // key retired (auth), or a probe another caller took holds this
            // request back. Granted on the old choice, it went out to a key
            // known to be cooling or rejected (or as a second probe). What
            // it counted goes back; it is counted again when it may go.
            if (
              !sameGrant(choice, chooseSlot(lanes, this.#clock.now(), neededMs, this.#staggerMs))
            ) {
              void limit.giveBack?.()
              continue
            }
            giveBack = limit.giveBack
          }
          return this.#grant(
            lane,
            keys[choice.index],
            choice,
            deadline,
            heldBack ? now - startedAt : 0,
            request.model,
            giveBack,
          )
        }
        if (choice.kind === 'retired') {
          // Why each key is out: a key whose quota is gone for good is no
          // rejected key, and the client is told so (429, not 502).
          const retired = lanes.map((lane) => lane.find((s) => s.retiredUntilMs > now))
          const kinds = retired.map((slot) => slot?.retiredFor)
          // Published like any refusal (a fallback is one the metrics count).
          // A retired key is the longest of cooldowns (the cooldown channel
          // said so: `retired: auth`): the wait is until the first key is
          // back, Infinity while they are retired until restart.
          publishAdmission({
            provider,
            keyId: ((lanes[0] as Lane)[0] as Slot).keyId,
            action: request.hasFallback ? 'fallback' : 'fail',
            cause: 'cooldown',
            waitMs: Math.min(...retired.map((slot) => (slot?.retiredUntilMs ?? now) - now)),
          })
          // Each key retired for this model only (a quota that names it): said
          // so, as the key's other models still go.
          const forModel = retired.every((slot) => slot?.level === 'model')
          throw new KeysRetiredError({
            provider,
            keyIds: lanes.map((lane) => (lane[0] as Slot).keyId),
            reason: kinds.every((k) => k === 'quota_exhausted') ? 'quota_exhausted' : 'auth',
            ...(forModel ? { model: request.model } : {}),
          })
        }
        // A wait a server asked for beyond what this caller takes: another
        // key's wait within it is taken instead, else the call is refused at
        // once — the call that met the 429 did not sleep it either
        // (`decideRetry`: `retry-after-too-long`), and the next call with the
        // same `retry.maxRetryAfterMs: 5000` waited the server's whole 30 s
        // here. Not the whole wait capped: a backoff's or an overload's own
        // wait is the call's to take, whatever its `maxRetryAfterMs`.
        // A wait this caller does not take: said on the admission channel,
        // and thrown as the kind that holds (said so the caller's caller is
        // not told of a rate limit that is not its own: a gateway answers an
        // overload 503, not 429).
        const refuse = (
          at: { index: number; readyAt: number },
          reason: (overloaded: boolean) => string,
        ): never => {
          const waitMs = Math.max(0, at.readyAt - now)
          const laneOfWait = lanes[at.index] as Lane
          publishAdmission({
            provider,
            keyId: (laneOfWait[0] as Slot).keyId,
            action: hasFallback ? 'fallback' : 'fail',
            cause: 'cooldown',
            waitMs,
          })
          const overloaded = overloadHolds(laneOfWait, now)
          throw new RateLimitedError({
            provider,
            model: request.model,
            kind: overloaded ? 'overloaded' : 'rate_limited',
            limitedBy: overloaded ? undefined : coolingLimitedBy(lanes, now),
            retryAfterMs: waitMs,
            retryAtMs: this.#wall() + waitMs,
            reason: reason(overloaded),
          })
        }
        const askedMs = serverWaitMs(lanes[choice.index] as Lane, now)
        if (askedMs > maxRetryAfterMs) {
          const within: Lane[] = []
          // When the soonest of the others comes within it: looked at again then.
          let withinAt = Number.POSITIVE_INFINITY
          for (const lane of lanes) {
            const ms = serverWaitMs(lane, now)
            if (ms <= maxRetryAfterMs) within.push(lane)
            else withinAt = Math.min(withinAt, now + ms - maxRetryAfterMs)
          }
          const other = chooseSlot(within, now, neededMs, this.#staggerMs)
          if (other.kind === 'wait') {
            const index = lanes.indexOf(within[other.index] as Lane)
            // Weighed below by when a key frees first: the one held past
            // the cap frees at its own readyAt too, and is taken then (woken
            // at `withinAt`). By the other's alone, a longer backoff on a key
            // this call would not take refused it, naming that key's wait.
            choice = {
              ...other,
              index,
              wakeAt: Math.min(other.wakeAt, withinAt),
              readyAt: Math.min(other.readyAt, choice.readyAt),
            }
          } else {
            // Worded as the first call's refusal (`decideRetry`), so both read alike.
            refuse(
              choice,
              () =>
                `the provider asked for ${hintSeconds(Math.ceil(askedMs))}, beyond maxRetryAfterMs (${maxRetryAfterMs} ms); not waited`,
            )
          }
        }
        const remaining = enforcedRemaining(deadline)
        const waitMs = Math.max(0, choice.readyAt - now)
        const latestStartMs = startWithinMs(remaining, neededMs)
        const laneOfWait = lanes[choice.index] as Lane
        const keyIdOfWait = (laneOfWait[0] as Slot).keyId
        if (waitMs > 0 && request.waitsOnOverload === false && overloadHolds(laneOfWait, now)) {
          refuse(
            choice,
            () =>
              `the provider is cooling after an overload for ${Math.ceil(waitMs)} ms or more; the caller takes no wait on an overload`,
          )
        }
        if (waitMs <= latestStartMs && waitMs > maxWaitMs) weighAgain()
        if (waitMs > latestStartMs || waitMs > maxWaitMs) {
          const why =
            waitMs > latestStartMs
              ? `${Math.floor(remaining)} ms left, ${Math.ceil(neededMs)} ms needed`
              : `the caller takes waits of at most ${Math.floor(maxWaitMs)} ms`
          refuse(choice, (overloaded) =>
            overloaded
              ? `the provider is cooling after an overload for ${Math.ceil(waitMs)} ms or more; ${why}`
              : `every key is cooling for ${Math.ceil(waitMs)} ms or more; ${why}`,
          )
        }
        publishAdmission({
          provider,
          keyId: keyIdOfWait,
          action: 'wait',
          cause: 'cooldown',
          waitMs,
        })
        seen = slots.map((slot) => slot.reopened)
        const timerMs = Math.min(choice.wakeAt - now, latestStartMs, MAX_TIMER_MS)
        heldBack = true
        // Held by another of its slots: a probe kept for it goes to the next in line.
        passProbes(slots, place)
        handOn()
        await wait(timerMs, { ...until, wakeOn: (wake) => onChange(slots, wake, place) })
      }
    } finally {
      // Ended (its deadline, its signal, a refusal) before it counted again.
      handOn()
      leaveLine(slots, place)
    }
  }

  /**
   * Feed an outcome for `provider`+`key` from outside a permit (a request
   * admission did not grant). `where` names the endpoint (as in `acquire`)
   * and the model whose latency a success records.
   */
  report(
    provider: string,
    key: string | undefined,
    outcome: AdmissionOutcome,
    where: { endpoint?: string | undefined; model?: string | undefined } = {},
  ): Promise<void> {
    return this.#book.apply(
      this.#book.lane(provider, scopeOf(provider, where.endpoint), this.#id(key), where.model),
      outcome,
      undefined,
      outcome.latencyMs,
      where.model,
    )
  }

  /** One lane per key: its slot, the model's on it (when named), the provider's. */
  #lanesOf(target: AdmissionTarget): Lane[] {
    const scope = scopeOf(target.provider, target.endpoint)
    return keysOf(target).map((key) =>
      this.#book.lane(target.provider, scope, this.#id(key), target.model),
    )
  }

  #grant(
    lane: Lane,
    key: string | undefined,
    choice: { index: number; probe: boolean },
    deadline: Deadline | undefined,
    waitedMs: number,
    model: string | undefined,
    giveBack: (() => Promise<void>) | undefined,
  ): AdmissionPermit {
    const now = this.#clock.now()
    const slot = lane[0] as Slot
    let token: ProbeToken | undefined
    if (choice.probe) {
      // The probe holds the half-open slots until it reports, or until it could no longer be running.
      const end = now + enforcedRemaining(deadline)
      token = { startedAt: now, leaseUntil: Math.min(end, now + this.#probeLeaseMs) }
      for (const held of lane) {
        if (!held.halfOpen) continue
        held.probeFor = undefined
        held.probe = token
      }
      publishAdmission({
        provider: slot.provider,
        keyId: slot.keyId,
        action: 'probe',
        cause: 'cooldown',
        waitMs: waitedMs,
      })
    } else if (choice.index > 0) {
      publishAdmission({
        provider: slot.provider,
        keyId: slot.keyId,
        action: 'switch-key',
        cause: 'cooldown',
        waitMs: waitedMs,
      })
    }
    return createPermit(this.#book, this.#clock, lane, key, token, waitedMs, model, giveBack)
  }

  #id(key: string | undefined): string {
    return this.#ids.id(key)
  }
}

/**
 * `storeTimeoutMs`'s default for a store of the user's: `RedisCooldownStore`'s
 * `commandTimeoutMs` default, well above a healthy round trip, well below a
 * call's deadline.
 */
const DEFAULT_STORE_TIMEOUT_MS = 1000

/** `storeBackoffMs`'s default, for every store: as `ProviderLimits`' `redisBackoffMs`. */
const DEFAULT_STORE_BACKOFF_MS = 1000

/** Every option the constructor reads (the type checker keeps the list whole). */
const OPTION_NAMES = Object.keys({
  store: true,
  clock: true,
  wallClock: true,
  cooldownMs: true,
  maxRetryAfterMs: true,
  staggerMs: true,
  probeLeaseMs: true,
  defaultNeededMs: true,
  latencySamples: true,
  latencyPercentile: true,
  retireMs: true,
  logger: true,
  storeBackoffMs: true,
  storeTimeoutMs: true,
  random: true,
  limits: true,
} satisfies Record<keyof AdmissionOptions, true>)

/** The options that are functions, and what each must be: anything else is refused (`TypeError`). */
const FUNCTION_OPTIONS = [
  ['cooldownMs', 'a function (input) => ms (the wait of a limit without a hint)'],
  ['random', 'a function returning [0, 1)'],
  ['wallClock', 'a function returning epoch ms'],
] as const

/** The options that are times or counts: NaN or no number is refused, a negative clamped to 0. */
const NUMERIC_OPTIONS = [
  'staggerMs',
  'probeLeaseMs',
  'defaultNeededMs',
  'latencySamples',
  'latencyPercentile',
  'retireMs',
  'storeBackoffMs',
] as const

/**
 * `undefined` (the default) or a number that is not NaN; ±Infinity passes
 * (clamped, or "no limit"). A `RangeError` for NaN, a `TypeError` for no
 * number, both naming the option.
 */
function checkNumber(where: string, name: string, value: unknown): void {
  if (value === undefined) return
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw optionError(`${where}: ${name}`, 'a number', value)
  }
}

/**
 * An overload holds `lane` back: its provider-wide slot cooling, or that
 * slot's half-open probe in flight — only an overload cools a provider
 * (`cooldownScopeOf`: dialects scope a limit to a model or a key), and
 * while it holds no key can send, whatever the keys' own limits; read from
 * the slot, so a cooldown another process of the fleet started (a shared
 * store) says so too — or a model's or key's slot cooled by an overload
 * scoped so by the upstream (`x-hourglass-cooldown-scope`: a gateway's one
 * route), the same way. One such cooldown learned from the store is not
 * known as an overload (the store keeps no cause): refused as a rate limit.
 */
function overloadHolds(lane: Lane, now: number): boolean {
  for (const slot of lane) {
    if (slot.level !== 'provider' && !slot.overloaded) continue
    if (slot.untilMs > now) return true
    if (slot.halfOpen && slot.probe !== undefined && slot.probe.leaseUntil > now) return true
  }
  return false
}

function keysOf(target: AdmissionTarget): Array<string | undefined> {
  return target.keys && target.keys.length > 0 ? [...target.keys] : [undefined]
}

/** The store's name for a provider: its name, plus its endpoint's id when one is given. */
function scopeOf(provider: string, endpoint: string | undefined): string {
  return endpoint === undefined || endpoint === ''
    ? provider
    : `${provider}@${endpointId(endpoint)}`
}

/** `now` grants what `before` did: the same lane, a probe or not alike. */
function sameGrant(before: SlotChoice & { kind: 'grant' }, now: SlotChoice): boolean {
  return now.kind === 'grant' && now.index === before.index && now.probe === before.probe
}

function noop(): void {}

/**
 * How long from now the request may still start, given `remainingMs` of
 * its deadline and `neededMs` it needs: without a deadline (Infinity) every
 * wait fits, whatever it needs. Subtracted, an Infinity needed (a
 * `retry.minAttemptMs` or `defaultNeededMs` of Infinity) made it NaN, which
 * refused no wait and armed each one as 0 ms: a cooling provider's waiter
 * looped without end, the event loop never turning again.
 */
function startWithinMs(remainingMs: number, neededMs: number): number {
  return remainingMs === Number.POSITIVE_INFINITY ? remainingMs : remainingMs - neededMs
}

/**
 * The limit every cooling slot's rate limit named, when they all named the
 * same: what a refusal by cooldowns says (the gateway's 429 `type`).
 * Undefined when one did not say, or they differ.
 */
function coolingLimitedBy(lanes: readonly Lane[], now: number): RateLimitedBy | undefined {
  let named: RateLimitedBy | undefined
  for (const lane of lanes) {
    // As `chooseSlot` reads a lane: a retired key's is out, and of the rest
    // only the slots that hold their lane back count (cooling, or a probe
    // in flight) — not a half-open one whose wait is over.
    if (lane.some((slot) => slot.retiredUntilMs > now)) continue
    for (const slot of lane) {
      const holds =
        slot.untilMs > now ||
        (slot.halfOpen && slot.probe !== undefined && slot.probe.leaseUntil > now)
      if (!holds) continue
      if (slot.limitedBy === undefined || (named !== undefined && slot.limitedBy !== named)) {
        return undefined
      }
      named = slot.limitedBy
    }
  }
  return named
}

/** A caller waiting for a limits window's reset: its place in line, its waker, when its wait ends. */
interface ResetWaiter {
  place: Place
  wake: () => void
  dueAt: number
  /** Gone from the line (woken, or its wait ended): skipped, and dropped once at the head. */
  left: boolean
}

/**
 * The callers waiting for one limit's reset, in line order (`byPlace`) from
 * `head`. An array with a head, not a set copied and sorted at each timer:
 * at a reset every waiter's timer fires, and the copy made that n² (10,000
 * waiters held the event loop ~400 ms each window).
 */
interface ResetLine {
  waiters: ResetWaiter[]
  head: number
}

/** `waiter` joins the callers waiting for one limit's reset (`line`); returns its leave. */
function joinReset(lines: Map<string, ResetLine>, line: string, waiter: ResetWaiter): () => void {
  let queue = lines.get(line)
  if (queue === undefined) {
    queue = { waiters: [], head: 0 }
    lines.set(line, queue)
  }
  const own = queue
  // In line order, found by halves (a caller back after a refused count
  // keeps its earlier place, ahead of every newer waiter: a scan from the
  // end made a reset of 10,000 waiters n²).
  const waiters = own.waiters
  let low = own.head
  let high = waiters.length
  if (high > low && byPlace((waiters[high - 1] as ResetWaiter).place, waiter.place) > 0) {
    while (low < high) {
      const mid = (low + high) >>> 1
      if (byPlace((waiters[mid] as ResetWaiter).place, waiter.place) < 0) low = mid + 1
      else high = mid
    }
    waiters.splice(low, 0, waiter)
  } else waiters.push(waiter)
  return () => {
    if (waiter.left) return
    waiter.left = true
    while (own.head < own.waiters.length && (own.waiters[own.head] as ResetWaiter).left) own.head++
    if (own.head === own.waiters.length) {
      if (lines.get(line) === own) lines.delete(line)
    } else if (own.head > 64 && own.head * 2 > own.waiters.length) {
      own.waiters = own.waiters.slice(own.head)
      own.head = 0
    }
  }
}

/**
 * Wakes, longest waiting first, the callers of `line` before `place` whose
 * wait for the same reset ends within a ms of `now` (the windows count whole
 * ms of the wall clock, the waits fractional ones on the admission's clock).
 * Whether it woke any: the caller at `place` then lets them count first.
 */
function wakeOlder(
  lines: Map<string, ResetLine>,
  line: string,
  place: Place,
  now: number,
): boolean {
  const queue = lines.get(line)
  if (queue === undefined) return false
  const older: ResetWaiter[] = []
  for (let i = queue.head; i < queue.waiters.length; i++) {
    const waiter = queue.waiters[i] as ResetWaiter
    // The rest come later in line.
    if (byPlace(waiter.place, place) >= 0) break
    if (!waiter.left && waiter.dueAt <= now + 1) older.push(waiter)
  }
  for (const waiter of older) waiter.wake()
  return older.length > 0
}
