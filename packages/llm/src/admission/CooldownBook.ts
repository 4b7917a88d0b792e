import type { Clock } from '@hourglass/core'
import { infoSafely, warnSafely } from '../callHook.js'
import { limitKindOf } from '../errors/limitKindOf.js'
import { serverHintMs } from '../retry/maxRetryAfter.js'
import type { CooldownScope } from '../types.js'
import { answeredWithin } from './answeredWithin.js'
import type { CooldownStore } from './CooldownStore.js'
import { type CooldownInput, defaultCooldownMs } from './defaultCooldownMs.js'
import type { LatencyTracker } from './LatencyTracker.js'
import { OwnStoreWrites } from './OwnStoreWrites.js'
import { publishCooldown } from './publish.js'
import {
  type AdmissionOutcome,
  byPlace,
  classify,
  cooldownScopeOf,
  createSlot,
  type Lane,
  PROVIDER_SLOT_ID,
  type ProbeToken,
  type Slot,
  wake,
} from './slot.js'

/**
 * How much later than the latest end this process knows of a cooldown read
 * from the store may end and still be that end: the store's whole-ms
 * truncation, its clock against this one.
 */
const STORE_END_SLACK_MS = 50

export interface CooldownBookOptions {
  store: CooldownStore
  clock: Clock
  wall: () => number
  cooldownMs: (input: CooldownInput) => number
  retireMs: number
  /** The longest cooldown a server's hint starts, in ms (finite). */
  maxRetryAfterMs: number
  latency: LatencyTracker
  logger: { warn(message: string): void; info?: ((message: string) => void) | undefined }
  /**
   * After the store fails (a command timeout against a frozen Redis, a lost
   * connection), how long `refresh` decides on this process's view without
   * asking it, in ms; then one refresh asks again. 0 = ask every time.
   * Default 1000.
   */
  storeBackoffMs?: number | undefined
  /**
   * How long a store call may go unanswered, in ms, on `clock`: then it
   * counts as the store failing (as a rejection does). Infinity = none.
   * Default Infinity (`Admission` sets it).
   */
  storeTimeoutMs?: number | undefined
}

/**
 * Slots held before idle ones are dropped. A service that builds adapters
 * from its clients' input (their own keys, their model names) makes a slot
 * per key and model it ever saw: ~1.6 KB each, and the default admission
 * lives as long as the process.
 */
export const MAX_IDLE_SLOTS = 4096

/**
 * Retirements held at most; past it the oldest is forgotten (its key gets
 * one more real request, retired again on its next 401). A retired slot is
 * never idle, so with the default `retireMs` (until restart) a service
 * passing its clients' own keys through kept a slot for every bad key any
 * client ever sent.
 */
export const MAX_RETIRED_SLOTS = 1024

/**
 * This process's view of every provider+key: the local mirror of the store,
 * kept so a decision right after a report needs no round trip, and so the
 * process keeps working (on what it knows) while the store is down.
 */
export class CooldownBook {
  readonly #o: CooldownBookOptions
  readonly #slots = new Map<string, Slot>()
  /** The retired slots, the longest retired first (`MAX_RETIRED_SLOTS` at most). */
  readonly #retired = new Set<Slot>()
  /** The size at which the next sweep for idle slots runs. */
  #sweepAt = MAX_IDLE_SLOTS
  #sweepQueued = false
  #storeFailing = false
  /**
   * On the clock: until when `refresh` does not ask the store. -Infinity
   * while nothing has failed. A frozen Redis keeps its connection open and
   * answers nothing: every `acquire` waited the client's `commandTimeout`
   * for a refresh bound to fail (250 ms added to every call of the process,
   * and to every re-check after a wait), for as long as Redis stayed frozen.
   */
  #storeRetryAtMs = Number.NEGATIVE_INFINITY
  readonly #backoffMs: number
  readonly #timeoutMs: number
  /** Store failures so far: an answer to a command sent before the latest failure clears nothing. */
  #storeFailures = 0
  /** The store's connection was seen other than `ready` during this back-off. */
  #storeSeenDown = false
  /** This process's own writes to the store, told from another instance's when read back. */
  readonly #own = new OwnStoreWrites(STORE_END_SLACK_MS)

  constructor(options: CooldownBookOptions) {
    this.#o = options
    this.#backoffMs = options.storeBackoffMs ?? 1000
    this.#timeoutMs = options.storeTimeoutMs ?? Number.POSITIVE_INFINITY
  }

  /**
   * The slot of `provider` (in `scope`: the provider, or provider and
   * endpoint) at `level`: `keyId`'s, `model`'s on `keyId`, or the provider's.
   */
  slot(
    provider: string,
    scope: string,
    keyId: string,
    level: CooldownScope = 'key',
    model?: string | undefined,
  ): Slot {
    const id =
      level === 'provider' ? PROVIDER_SLOT_ID : level === 'model' ? `${keyId}:${model}` : keyId
    const name = `${scope}\u0000${id}`
    let slot = this.#slots.get(name)
    if (!slot) {
      slot = createSlot(provider, scope, keyId, level, model)
      this.#slots.set(name, slot)
      if (this.#slots.size >= this.#sweepAt && !this.#sweepQueued) {
        // After the caller has built its lanes and joined their lines (all
        // synchronous): swept now, the key slot of a lane being built is
        // idle and would be dropped under the request that holds it.
        this.#sweepQueued = true
        queueMicrotask(() => this.#sweep())
      }
    }
    return slot
  }

  /** Slots held (for tests and diagnostics). */
  get size(): number {
    return this.#slots.size
  }

  /**
   * Drops every slot that holds nothing: not cooling, not retired, no probe,
   * nobody in its line. One made again later starts the same. What must
   * stay does (dropping it would lift a cooldown or a retirement); when that
   * is most of the map, the next sweep waits until it has doubled, so a
   * sweep costs O(1) per slot made whatever is kept.
   */
  #sweep(): void {
    this.#sweepQueued = false
    const now = this.#o.clock.now()
    for (const [name, slot] of this.#slots) {
      if (!isIdle(slot, now)) continue
      this.#slots.delete(name)
      // A retirement that ran out (a finite `retireMs`) is done with too.
      this.#retired.delete(slot)
    }
    this.#sweepAt = Math.max(MAX_IDLE_SLOTS, 2 * this.#slots.size)
  }

  /**
   * `slot` holds a cooldown or a retirement: make it the one this process
   * looks up again. A request in flight keeps the slots it was granted on;
   * if a sweep dropped one meanwhile (it was idle), what the request learned
   * would otherwise stay on a slot nobody looks at — a retirement is kept
   * nowhere else. Merged into the slot made since, if any: the one kept is
   * returned.
   */
  #keep(slot: Slot): Slot {
    const name = `${slot.scope}\u0000${slot.storeId}`
    const current = this.#slots.get(name)
    if (current === slot) return slot
    if (current === undefined) {
      this.#slots.set(name, slot)
      return slot
    }
    if (slot.untilMs > current.untilMs) {
      current.untilMs = slot.untilMs
      current.limitedBy = slot.limitedBy
    }
    current.serverUntilMs = Math.max(current.serverUntilMs, slot.serverUntilMs)
    if (slot.halfOpen && !current.halfOpen) {
      current.halfOpen = true
      current.coolingSince = slot.coolingSince
      current.limitedBy = slot.limitedBy
    }
    current.strikes = Math.max(current.strikes, slot.strikes)
    if (slot.retiredUntilMs > current.retiredUntilMs) {
      current.retiredUntilMs = slot.retiredUntilMs
      current.retiredFor = slot.retiredFor
    }
    wake(current)
    return current
  }

  /**
   * `slot` (kept) was just retired: it goes last in the order of
   * retirements, and past `MAX_RETIRED_SLOTS` the longest retired is
   * forgotten. Its key is tried again by the next request that names it (a
   * bad key costs one more 401 per `MAX_RETIRED_SLOTS` others retired since);
   * its slot is then idle, and goes with the next sweep. Only on a
   * retirement, never on a call's path.
   */
  #retire(slot: Slot, now: number): void {
    this.#retired.delete(slot)
    this.#retired.add(slot)
    if (this.#retired.size <= MAX_RETIRED_SLOTS) return
    const oldest = this.#retired.values().next().value as Slot
    this.#retired.delete(oldest)
    // Ran out already (a finite `retireMs`): nothing to forget.
    if (oldest.retiredUntilMs <= now) return
    oldest.retiredUntilMs = 0
    oldest.retiredFor = undefined
    // A caller waiting for another key of its lanes may take this one now.
    wake(oldest)
  }

  /** The lane a request on `keyId` (for `model`, when named) goes through: key, model, provider. */
  lane(provider: string, scope: string, keyId: string, model: string | undefined): Lane {
    const key = this.slot(provider, scope, keyId)
    const everyKey = this.slot(provider, scope, PROVIDER_SLOT_ID, 'provider')
    return model === undefined
      ? [key, everyKey]
      : [key, this.slot(provider, scope, keyId, 'model', model), everyKey]
  }

  /** Merge the store's cooldowns (another process may have learned a limit) into the local view. */
  async refresh(slots: readonly Slot[]): Promise<void> {
    const scope = slots[0]?.scope
    if (scope === undefined) return
    if (this.#storeRetryAtMs !== Number.NEGATIVE_INFINITY) {
      const now = this.#o.clock.now()
      // Backing off after a failure: decide on what this process knows —
      // unless the store reconnected since (a restarted Redis): ask it now.
      if (now < this.#storeRetryAtMs && !this.#storeReconnected()) return
      // This refresh asks again; the others stay local until it is answered.
      this.#storeRetryAtMs = now + this.#backoffMs
    }
    const failures = this.#storeFailures
    // The store measures what is left when the question reaches it, after
    // this: `askedAt + ms` is the least its end can be.
    const askedAt = this.#o.clock.now()
    let remaining: number[]
    try {
      remaining = await this.#bounded(
        this.#o.store.remaining(
          scope,
          slots.map((s) => s.storeId),
        ),
      )
      this.#storeAnswered(failures)
    } catch (error) {
      this.#storeDown(error)
      return
    }
    const now = this.#o.clock.now()
    for (const [i, slot] of slots.entries()) {
      const ms = remaining[i] ?? 0
      if (ms <= 0) continue
      const until = now + ms
      const fresh = !slot.halfOpen && slot.untilMs <= now
      // An end later than any this process set or wrote is another
      // instance's, whose cause the store does not keep: a wrong `tokens`
      // would send clients off shrinking requests. Its own write read back,
      // or a shorter end elsewhere (its own write failed), leaves its cause.
      // `askedAt + ms` is the least the store's end can be.
      const known = Math.max(slot.untilMs, slot.ownStoreUntilMs)
      // Nothing set or written here (0; the clock may start near 0): any
      // end is another instance's, however short.
      const news = known === 0 || askedAt + ms > known + STORE_END_SLACK_MS
      // Not cooling here, and the store holds only this process's own write:
      // a finite retirement (held by `retiredUntilMs`, announced when it
      // began; or forgotten, its key tried once more), or a cooldown an
      // answer has closed since. Nothing to learn: taken as news, it was
      // announced again as another instance's start (`learned`, which a
      // fleet's count leaves out), and a key whose retirement had run out
      // (or been forgotten) was held as cooling. Only where it is certainly
      // its own (`OwnStoreWrites`: the write's least end, not `known`, its
      // most): an extra start costs a probe, another instance's 429 taken
      // for its own sent a request into the same limit.
      if (fresh && this.#own.isOwn(`${slot.scope}\u0000${slot.storeId}`, now + ms)) continue
      if (fresh || news) slot.limitedBy = undefined
      // Another instance's start: its cause is not stored, so no overload
      // here. Its longer end on a cooldown this process still runs keeps
      // this one's (a model-scoped overload stays one, not a rate limit);
      // a half-open slot whose own end has passed keeps nothing.
      if (fresh || slot.untilMs <= now) slot.overloaded = false
      // Sub-millisecond differences are the store's rounding, not news.
      if (until > slot.untilMs + 1) slot.untilMs = until
      slot.halfOpen = true
      if (fresh) {
        slot.coolingSince = now
        this.#cooldownEvent(slot, 'start', 'shared: learned from the store', slot.untilMs, true)
      } else if (news) {
        // Another instance's longer wait on a cooldown this process holds:
        // said, or this process's spans and counts kept its shorter one.
        this.#cooldownEvent(slot, 'extend', 'shared: learned from the store', slot.untilMs, true)
      }
    }
  }

  /**
   * Apply what came of one request sent through `lane`. `token` identifies
   * the probe, when the request was it; a success's latency is recorded for
   * the lane's scope and, when `model` is given, for that model there; an
   * answer closes every half-open slot of the lane. A limit cools the slot
   * of its scope (`cooldownScopeOf`: the model's, the key's or the
   * provider's); an auth failure retires the key (a quota gone for good
   * retires what it names: the model on the key, else the key). `sentAt` is when the
   * request was admitted, when known.
   */
  async apply(
    lane: Lane,
    outcome: AdmissionOutcome,
    token: ProbeToken | undefined,
    latencyMs: number | undefined,
    model?: string | undefined,
    sentAt?: number | undefined,
  ): Promise<void> {
    const probed: Slot[] = []
    for (const slot of lane) {
      if (token !== undefined && slot.probe === token) {
        slot.probe = undefined
        probed.push(slot)
      }
    }
    const key = lane[0] as Slot
    const verdict = classify(outcome)
    if (verdict === 'success' || verdict === 'answered') {
      if (verdict === 'success' && latencyMs !== undefined) {
        this.#o.latency.record(key.scope, latencyMs)
        if (model !== undefined) this.#o.latency.record(modelScope(key.scope, model), latencyMs)
      }
      // Every slot records its followers before anyone is woken: a woken
      // waiter leaves every slot's wakers at once, so waking the key's slot
      // first left a cooling model's (or provider's) slot with no followers
      // to spread — they all went together.
      for (const slot of lane) this.#answered(slot, probed.includes(slot))
      for (const slot of lane) wake(slot)
      return
    }
    if (outcome.ok) return
    let slot = key
    if (verdict === 'cooldown') {
      const scope = cooldownScopeOf(outcome.error)
      slot = lane.find((s) => s.level === scope) ?? key
    } else if (verdict === 'retire' && outcome.error.scope === 'model') {
      // A quota gone for good that the provider says is the model's (Gemini's
      // `limit: 0`: that model is not in the key's tier) retires that model
      // on the key; retiring the key stopped its other models too.
      slot = lane.find((s) => s.level === 'model') ?? key
    }
    // The other probes this request held say nothing: the next waiter probes them.
    for (const other of probed) if (other !== slot) wake(other)
    await this.#failed(slot, outcome, probed.includes(slot), sentAt)
  }

  /**
   * The provider answered through `slot`: a half-open slot whose cooldown is
   * over closes. Its waiters are woken by the caller, once every slot of the lane is done.
   */
  #answered(slot: Slot, wasProbe: boolean): void {
    const now = this.#o.clock.now()
    if (slot.halfOpen && slot.untilMs <= now) {
      slot.halfOpen = false
      slot.reopened++
      // Everyone waiting now follows this answer, in the order they came.
      slot.followers = [...slot.wakers.values()].sort(byPlace)
      this.#cooldownEvent(slot, 'end', wasProbe ? 'probe answered' : 'answered')
    }
    if (!slot.halfOpen) slot.strikes = 0
  }

  async #failed(
    slot: Slot,
    outcome: Extract<AdmissionOutcome, { ok: false }>,
    wasProbe: boolean,
    sentAt: number | undefined,
  ): Promise<void> {
    const now = this.#o.clock.now()
    const verdict = classify(outcome)
    const { kind, status } = outcome.error
    // As the retry path reads a hint (`serverHintMs`): NaN or a negative is
    // none. A NaN hint made the cooldown NaN — nothing held back, here or in
    // the fleet — and Redis refused the write, logged as the store being down.
    const retryAfterMs = serverHintMs(outcome.error.retryAfterMs)
    if (verdict === 'retire') {
      if (this.#o.retireMs <= 0) return
      slot.retiredUntilMs = now + this.#o.retireMs
      slot.retiredFor = kind
      this.#retire(this.#keep(slot), now)
      this.#cooldownEvent(slot, 'start', `retired: ${kind}`, slot.retiredUntilMs)
      wake(slot)
      if (Number.isFinite(this.#o.retireMs)) {
        await this.#extendStore(slot, this.#o.retireMs, `retired: ${kind}`)
      }
      return
    }
    if (verdict === 'unknown') {
      // Says nothing about the limit: let the next waiter probe instead.
      if (wasProbe) wake(slot)
      return
    }
    const wasCooling = slot.halfOpen || slot.untilMs > now
    // A limit met by a request sent before this cooldown began is the same
    // window, reported late (it was in flight): a burst of N concurrent 429s
    // is one strike, not N — or the backoff would reach its cap at once. Only
    // a server's own wait still extends the cooldown.
    const late = wasCooling && sentAt !== undefined && sentAt < slot.coolingSince
    if (late && retryAfterMs === undefined) return
    if (!late) slot.strikes++
    if (!wasCooling) slot.coolingSince = now
    const own = finiteWait(outcome.cooldownMs)
    // A server's hint is capped, not trusted: this cooldown is shared by every
    // call of the process (of the fleet, on Redis), so one `Retry-After:
    // 86400` — a proxy's default, a daily-quota message, a bug — blocked the
    // model, key or provider for a day, every call refused with nothing sent
    // and nothing ever asking whether the limit still held. Capped, it costs
    // one probe per `maxRetryAfterMs` while the limit does hold, and the
    // traffic comes back within that much once it is lifted.
    const cap = this.#o.maxRetryAfterMs
    const capped = retryAfterMs !== undefined && retryAfterMs > cap ? retryAfterMs : undefined
    const input = { kind, status, strikes: slot.strikes }
    const waitMs =
      (capped !== undefined ? cap : retryAfterMs) ??
      own ??
      finiteWait(this.#o.cooldownMs(input)) ??
      defaultCooldownMs(input)
    // Which limit holds it, for a refusal to say (a 429 `tokens` invites a
    // smaller request): this failure's, when it starts the cooldown or moves
    // its end; one that does not (a late, shorter report) leaves the cause
    // of the end that holds.
    if (!wasCooling || now + waitMs > slot.untilMs) {
      slot.limitedBy = kind === 'rate_limited' ? outcome.error.limitedBy : undefined
      slot.overloaded = limitKindOf(outcome.error) === 'overloaded'
    }
    slot.untilMs = Math.max(slot.untilMs, now + waitMs)
    // The part a server asked for, told from the waits no server asked for: a
    // caller's `maxRetryAfterMs` refuses the one, never the others.
    if (retryAfterMs !== undefined) {
      slot.serverUntilMs = Math.max(slot.serverUntilMs, now + waitMs)
    }
    slot.halfOpen = true
    this.#keep(slot)
    // Named as the retry path names it (`limitKindOf`): an overload's own
    // wait (5–10 s) is no backoff step, and a 503 labelled `server_error` is
    // an overload here as there.
    const limit = limitKindOf(outcome.error)
    const hint =
      outcome.error.quotaWindow === 'day' ? 'a per-day quota: until its reset' : 'server hint'
    const source =
      capped !== undefined
        ? outcome.error.quotaWindow === 'day'
          ? `${hint}, capped at maxRetryAfterMs (${cap} ms)`
          : `${hint} of ${Math.ceil(capped)} ms capped at maxRetryAfterMs (${cap} ms)`
        : retryAfterMs !== undefined
          ? hint
          : own !== undefined
            ? "caller's wait"
            : limit === 'overloaded'
              ? 'overload wait'
              : 'backoff'
    const reason = `${limit ?? kind} (${status}), ${source}${wasProbe ? ', probe failed' : ''}`
    this.#cooldownEvent(slot, wasCooling ? 'extend' : 'start', reason)
    wake(slot)
    await this.#extendStore(slot, waitMs, reason)
  }

  /**
   * Written even while refreshes back off: a limit learned is what the
   * fleet needs to hear, and writes come only with limits, not with every call.
   */
  async #extendStore(slot: Slot, waitMs: number, reason: string): Promise<void> {
    // Backing off after a failure: written, not waited for. The local view
    // already holds the cooldown; `callModel` waits for a report before its
    // next attempt, and with Redis frozen every 429 waited the store's
    // timeout (a call whose three keys answered 429 reached its fallback
    // 3 s late, call after call) — one timeout per back-off, as for reads.
    // Once the back-off has run out, this write is the one retry, as a
    // refresh would be: it moves the next retry on before it is sent, so
    // the reports meanwhile are not waited for either (each of them waited
    // the full timeout for a store the first had not heard back from).
    let waited = true
    if (this.#storeRetryAtMs !== Number.NEGATIVE_INFINITY) {
      const now = this.#o.clock.now()
      if (now < this.#storeRetryAtMs) waited = false
      else this.#storeRetryAtMs = now + this.#backoffMs
    }
    const failures = this.#storeFailures
    const sentAt = this.#o.clock.now()
    const written = (async () => {
      try {
        const taken = await this.#bounded(
          this.#o.store.extend(slot.scope, slot.storeId, waitMs, reason),
        )
        const now = this.#o.clock.now()
        // Its own only where the store took it (not an equal or longer wait
        // already there), for the wait it kept: a store caps it.
        if (taken.extended) {
          const kept = Math.min(waitMs, taken.remainingMs)
          this.#own.wrote(`${slot.scope}\u0000${slot.storeId}`, sentAt, kept, now)
        }
        // The store started the wait before its answer came (however late a
        // busy loop or an offline queue made that), in whole ms rounded up:
        // its end is at most this.
        slot.ownStoreUntilMs = Math.max(slot.ownStoreUntilMs, now + Math.max(1, Math.ceil(waitMs)))
        this.#storeAnswered(failures)
      } catch (error) {
        this.#storeDown(error)
      }
    })()
    if (waited) await written
  }

  /**
   * A store call, failing once it has gone `storeTimeoutMs` unanswered. A
   * store of the user's own (another database, a wrapper) has no bound of
   * its own that admission knows of: one that never answered held every
   * call that asked it until its deadline — one with none for good — and
   * never counted as failing, so the next call asked it again.
   */
  #bounded<T>(call: Promise<T>): Promise<T> {
    // None (the in-memory store, Redis's own bound): the call as it is, no extra hop.
    if (this.#timeoutMs === Number.POSITIVE_INFINITY) return call
    return answeredWithin(
      call,
      this.#timeoutMs,
      'the cooldown store',
      'Admission storeTimeoutMs',
      this.#o.clock,
    )
  }

  #cooldownEvent(
    slot: Slot,
    state: 'start' | 'extend' | 'end',
    reason: string,
    untilMs = slot.untilMs,
    learned = false,
  ): void {
    const now = this.#o.clock.now()
    const left = Number.isFinite(untilMs) ? Math.max(0, untilMs - now) : undefined
    const wallUntil =
      left === undefined ? Number.POSITIVE_INFINITY : Math.round(this.#o.wall() + left)
    publishCooldown({
      provider: slot.provider,
      keyId: slot.keyId,
      scope: slot.level,
      ...(slot.model === undefined ? {} : { model: slot.model }),
      state,
      untilMs: state === 'end' ? Math.round(this.#o.wall()) : wallUntil,
      ...(state === 'end' || left === undefined ? {} : { durationMs: left }),
      reason,
      ...(learned ? { learned: true as const } : {}),
    })
  }

  /**
   * The store's connection (when it says: `CooldownStore.status`) was seen
   * down during this back-off and is `ready` now: a new connection, which
   * Redis answered. Counts once.
   */
  #storeReconnected(): boolean {
    const status = this.#o.store.status
    if (status === undefined) return false
    if (status !== 'ready') {
      this.#storeSeenDown = true
      return false
    }
    if (!this.#storeSeenDown) return false
    this.#storeSeenDown = false
    return true
  }

  #storeDown(error: unknown): void {
    this.#storeFailures++
    this.#storeRetryAtMs = this.#o.clock.now() + this.#backoffMs
    const status = this.#o.store.status
    this.#storeSeenDown = status !== undefined && status !== 'ready'
    if (this.#storeFailing) return
    this.#storeFailing = true
    warnSafely(
      this.#o.logger,
      `hourglass admission: cooldown store unavailable, deciding on this process's view only (${(error as Error | undefined)?.message ?? String(error)})`,
    )
  }

  /**
   * The store answered a command sent when `failures` had happened: unless
   * one failed since, it is back — refreshes ask it again.
   */
  #storeAnswered(failures: number): void {
    if (failures !== this.#storeFailures) return
    this.#storeRetryAtMs = Number.NEGATIVE_INFINITY
    if (!this.#storeFailing) return
    this.#storeFailing = false
    infoSafely(this.#o.logger, 'hourglass admission: cooldown store available again')
  }
}

/**
 * A wait some code other than the server's computed (a caller's `cooldownMs`,
 * the `cooldownMs` option): a finite number of ms, negatives as 0, else none.
 * An Infinity cooled the slot for good in this process and could not be
 * written to Redis (`PX` takes an integer), so the fleet never heard of it.
 */
function finiteWait(ms: number | undefined): number | undefined {
  return typeof ms === 'number' && Number.isFinite(ms) ? Math.max(0, ms) : undefined
}

/** Holds nothing a later request needs: dropped by a sweep (`CooldownBook`). */
function isIdle(slot: Slot, now: number): boolean {
  return (
    !slot.halfOpen &&
    slot.untilMs <= now &&
    slot.retiredUntilMs <= now &&
    slot.strikes === 0 &&
    slot.probe === undefined &&
    slot.probeFor === undefined &&
    slot.line.size === 0 &&
    slot.wakers.size === 0
  )
}

/** The latency-tracker name of one model in one scope. */
export function modelScope(scope: string, model: string): string {
  return `${scope}\u0000${model}`
}
