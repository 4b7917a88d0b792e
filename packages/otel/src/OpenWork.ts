import type { Deadline } from '@hourglass/core'
import type { Span, TimeInput } from '@opentelemetry/api'

/** One request's slice and egress spans still open, and what waits for them. */
interface Work {
  open: number
  release: (() => void) | undefined
  /**
   * The span each open span was started under (its direct parent): the
   * server span, or one between them — instrumentation-express's `request
   * handler` —, which a cut request's hold must cover too, or it ends
   * before its children. Not a span further up (above an app's own span
   * around the work): a context gives no way to its ancestors.
   */
  parents: Map<Span, Span>
}

/**
 * How long a server span waits for its work's spans at most: a slice
 * started with `plan.slice()` and never ended, work that ignores its
 * cancellation. Cancelled work ends in a few ticks.
 */
export const HOLD_LIMIT_MS = 1000

/**
 * The slice, egress and gRPC client spans still open under each traced
 * request or gRPC call (its `owner` deadline), so that a server span ended
 * while they run — the caller left, the response failed, the deadline ran
 * out: the work was cancelled on the response's 'close' (or the call's
 * end), and its spans end a few ticks later, when their promises settle or
 * grpc-js hands back the cancelled call's status — ends after them, not
 * before (a child ending after its parent, drawn past the end of the
 * request and exported after it). A gRPC call's egress spans ended before
 * its server span already; its outbound gRPC calls' spans did not.
 *
 * Cost per span: a WeakMap read per ancestor of its deadline and a count.
 */
export class OpenWork {
  readonly #owners = new WeakMap<Deadline, Work>()
  readonly #of = new WeakMap<Span, Work>()

  /** `deadline` is a traced request's: count the spans of its work. */
  own(deadline: Deadline): void {
    this.#owners.set(deadline, { open: 0, release: undefined, parents: new Map() })
  }

  /** `span` was started for work under `deadline` (or an ancestor's owner), as a child of `parent`. */
  track(deadline: Deadline | undefined, span: Span, parent?: Span): void {
    for (let d = deadline; d !== undefined; d = d.parent) {
      const work = this.#owners.get(d)
      if (work === undefined) continue
      work.open++
      if (parent !== undefined) work.parents.set(span, parent)
      this.#of.set(span, work)
      return
    }
  }

  /** After `span` ended: the last of its owner's releases what waits for them. */
  untrack(span: Span): void {
    const work = this.#of.get(span)
    if (work === undefined) return
    this.#of.delete(span)
    work.parents.delete(span)
    work.open--
    if (work.open === 0) work.release?.()
  }

  /**
   * The owner is over: forget it (work started after it is not counted),
   * and call `end` once its open spans have ended — at once when none is,
   * after `HOLD_LIMIT_MS` on the deadline's clock at most.
   */
  endAfterWork(owner: Deadline, end: () => void): void {
    const work = this.#owners.get(owner)
    this.#owners.delete(owner)
    if (work === undefined || work.open === 0) {
      end()
      return
    }
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      work.release = undefined
      owner.clock.clearTimeout(limit)
      end()
    }
    work.release = release
    const limit = owner.clock.setTimeout(release, HOLD_LIMIT_MS)
  }

  /**
   * The same for a span another instrumentation ends (instrumentation-http's
   * server span, on the response's 'close'): its `end()` is replaced on this
   * span alone, only while its work is open, and it ends when that work has
   * (or the limit). Ended only if its owner asked meanwhile: a span of yours,
   * set as the request's and ended later, is not ended for you. A span that
   * cannot take the replacement (frozen) ends as its owner says.
   */
  holdEnd(owner: Deadline, span: Span): void {
    const work = this.#owners.get(owner)
    if (work === undefined || work.open === 0) {
      this.#owners.delete(owner)
      return
    }
    const hold = holdOf(span)
    if (hold === undefined) {
      this.#owners.delete(owner)
      return
    }
    hold.holders++
    // The spans the open work was started under, between it and this one:
    // instrumentation-express ends its `request handler` on the same
    // 'close', after this is heard, so before its slice and egress spans.
    // Not one of ours (an enclosing slice ends on its own), nor one ended
    // already. Let go before the server span: children end first.
    const parents: Array<[Span, Hold]> = []
    for (const parent of new Set(work.parents.values())) {
      if (parent === span || this.#of.has(parent) || !parent.isRecording()) continue
      // The request's own spans only: one of another trace (a span the app
      // keeps open around many requests) is not this request's to hold.
      if (parent.spanContext().traceId !== span.spanContext().traceId) continue
      const parentHold = holdOf(parent)
      if (parentHold === undefined) continue
      parentHold.holders++
      parents.push([parent, parentHold])
    }
    this.endAfterWork(owner, () => {
      for (const [parent, parentHold] of parents) letGo(parent, parentHold)
      letGo(span, hold)
    })
  }

  /** The owner is over and nothing waits: forget it. */
  forget(owner: Deadline): void {
    this.#owners.delete(owner)
  }
}

/**
 * One span's hold, shared by every holder: two instrumentations enabled at
 * once each hold the same server span (released in the order they
 * subscribed, the first to hold first), and one holds a span shared by
 * several requests (a `boot` span open around `listen()`) once per cut
 * request. Each with a replacement of its own, the first released put back
 * the span's `end()` over the next one's hold, and that one put back the
 * first's, already spent: the span was never ended. One replacement, put back
 * by the last to let go.
 */
interface Hold {
  holders: number
  held: boolean
  // The end time it was ended with, if any: passed on, not lost (ended
  // without one, it ends when released, after its work's spans).
  endTime: TimeInput | undefined
  readonly own: PropertyDescriptor | undefined
  readonly end: Span['end']
}

/**
 * Shared by every copy of this package loaded in the process (a harness's
 * and an SDK's, at other versions): each with a map of its own, the second
 * held the first's replacement as the span's own `end()` and the span was
 * never ended — the defect one hold per span fixes, across copies.
 */
const HOLDS: WeakMap<Span, Hold> = sharedHolds()

function sharedHolds(): WeakMap<Span, Hold> {
  const registry = globalThis as Record<symbol, unknown>
  const key = Symbol.for('@hourglass/otel.spanHolds.v1')
  const found = registry[key]
  if (found instanceof WeakMap) return found as WeakMap<Span, Hold>
  const made = new WeakMap<Span, Hold>()
  registry[key] = made
  return made
}

/** The span's hold, its `end()` replaced when none was; undefined when it cannot take one. */
function holdOf(span: Span): Hold | undefined {
  const existing = HOLDS.get(span)
  if (existing !== undefined) return existing
  const hold: Hold = {
    holders: 0,
    held: false,
    endTime: undefined,
    own: Object.getOwnPropertyDescriptor(span, 'end'),
    end: span.end,
  }
  const held = (time?: TimeInput): void => {
    if (hold.held) return
    hold.held = true
    hold.endTime = time
  }
  if (!Reflect.set(span, 'end', held)) return undefined
  HOLDS.set(span, hold)
  return hold
}

/** One holder is done: the last puts `end()` back, and ends the span if its owner asked. */
function letGo(span: Span, hold: Hold): void {
  if (--hold.holders > 0) return
  HOLDS.delete(span)
  if (hold.own === undefined) Reflect.deleteProperty(span, 'end')
  else Object.defineProperty(span, 'end', hold.own)
  if (hold.held) hold.end.call(span, hold.endTime)
}
