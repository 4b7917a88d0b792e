import { boundingDeadline } from './boundingDeadline.js'
import { MAX_TIMER_MS } from './clock.js'
import type { Deadline } from './Deadline.js'
import { describeValue } from './describeValue.js'
import { DEADLINE_HEADER } from './headerNames.js'
import { holdsHeaders } from './holdsHeaders.js'
import { isDeadline } from './isDeadline.js'

/** Where `writeDeadline` can put the header. */
export type HeaderTarget =
  | { set(name: string, value: string): unknown }
  | { setHeader(name: string, value: string): unknown }
  | Record<string, string | string[] | undefined>

/**
 * Set `x-deadline-remaining-ms` to the whole milliseconds left (at most
 * 2^31-1, about 24.8 days) — computed now,
 * so call it just before the request is sent. Relative, not absolute: clock
 * skew between hosts cannot eat the budget. Returns the value written, or
 * undefined when nothing was written: no deadline of its own (`never()`), or
 * an observe-only deadline that has passed or has less than a whole
 * millisecond left (dark mode must not make the next hop answer 504), with
 * nothing above it that bounds it: under an enforcing parent it writes what
 * that parent has left.
 *
 * A deadline that has ended with a reason — cancelled by its owner (the
 * client left; in dark mode too, and a `never()` one), or expired while
 * enforcing — writes 0, whatever its expiry: nobody waits for that work any
 * more, so the next hop is told there is no time and refuses at once. It
 * wrote the live remainder of its expiry (a cancelled 1 s deadline sent
 * `999`), where fetch and the gRPC client refuse to send at all (under an
 * enforced deadline) and the OpenTelemetry propagator writes 0.
 */
export function writeDeadline(
  headers: HeaderTarget,
  deadline: Deadline | undefined,
): number | undefined {
  if (typeof headers !== 'object' || headers === null) {
    // Else "Cannot read properties of null (reading 'set')", naming nothing.
    throw new TypeError(
      `writeDeadline: headers must be an object (Headers, a response or a record), got ${describeValue(headers)}`,
    )
  }
  if (Array.isArray(headers)) {
    // undici's other form: the value became a property of the array, never sent, no error.
    throw new TypeError(
      'writeDeadline: headers must be Headers, a response or a record, not an array of pairs',
    )
  }
  if (
    typeof (headers as { set?: unknown }).set !== 'function' &&
    typeof (headers as { setHeader?: unknown }).setHeader !== 'function' &&
    holdsHeaders(headers)
  ) {
    // `writeDeadline(init, d)`: written as a record, the value landed on the
    // RequestInit beside its `headers`, where fetch never sends it, and no
    // error said so.
    throw new TypeError(
      'writeDeadline: headers must be the headers themselves (init.headers), got an object that holds them (a request or its init)',
    )
  }
  // `false` is none, as before (`useIt && req.deadline`).
  if (deadline === undefined || deadline === null || (deadline as unknown) === false)
    return undefined
  if (!isDeadline(deadline)) {
    // A number of ms failed with "deadline.remaining is not a function".
    throw new TypeError(
      `writeDeadline: deadline must be a Deadline, got ${describeValue(deadline)}`,
    )
  }
  const ms = wireMs(deadline)
  if (ms === undefined) return undefined
  const value = String(ms)
  if (typeof (headers as { set?: unknown }).set === 'function') {
    // A Map is a record by another name: its keys are case-sensitive, where Headers' are not.
    if (headers instanceof Map) {
      // Deleting while a Map is iterated is safe: the rest is still visited.
      for (const key of headers.keys()) if (isOtherSpelling(key)) headers.delete(key)
    }
    ;(headers as { set(n: string, v: string): unknown }).set(DEADLINE_HEADER, value)
  } else if (typeof (headers as { setHeader?: unknown }).setHeader === 'function') {
    ;(headers as { setHeader(n: string, v: string): unknown }).setHeader(DEADLINE_HEADER, value)
  } else {
    const record = headers as Record<string, string>
    // for-in, not Object.keys: createFetch writes into a fresh `{}` per
    // attempt, and this allocates nothing; deleting the key being visited is safe.
    for (const key in record) {
      if (isOtherSpelling(key) && Object.hasOwn(record, key)) delete record[key]
    }
    record[DEADLINE_HEADER] = value
  }
  return ms
}

/**
 * The whole ms to send for `deadline`, or undefined for none. An
 * observe-only deadline whose time has passed (or has under a whole ms
 * left) is bounded by the deadlines above it: the nearest that enforces, or
 * an observe-only one that still has time. A budget on trial inside an
 * enforced request (`req.deadline.child(100, { observe: true })`) that has
 * run out still works under the request's deadline, which the next hop
 * must hear: it sent nothing, and the next hop took its own default (30 s
 * where the request had 850 ms left). With nothing above it, nothing.
 * The same rule (`boundingDeadline`) as fetch's and the gRPC client's.
 */
function wireMs(deadline: Deadline): number | undefined {
  const bound = boundingDeadline(deadline, 1)
  // `reason` is set only by a cancel or an enforced expiry (an observed
  // expiry aborts nothing and keeps none): either way the work is over.
  // An enforcing one's expiry ends the observe-only ones under it with its reason.
  if (endedWithReason(deadline) || endedWithReason(bound)) return 0
  // Under a whole millisecond is 0 on the wire: for an observe-only
  // deadline that is as good as passed, and a "0" made the next,
  // enforcing, hop answer 504 at once — so such a one bounds nothing here.
  const remaining = bound === undefined ? Number.POSITIVE_INFINITY : bound.remaining()
  if (!Number.isFinite(remaining)) return undefined
  // A reader takes at most 2^31-1 ms (a timer's limit) and clamps that to
  // its own maximum; more would be refused as malformed.
  return Math.min(Math.floor(remaining), MAX_TIMER_MS)
}

function endedWithReason(deadline: Deadline | undefined): boolean {
  return deadline?.done === true && deadline.reason !== undefined
}

/**
 * The header under another letter case (`X-Deadline-Remaining-Ms`): a
 * record (or a Map) that held one got ours beside it, and a request sent
 * with both carries the header twice — which a reader refuses as malformed
 * (core's `readDeadline`), falling back to its default budget.
 */
function isOtherSpelling(key: unknown): boolean {
  return (
    typeof key === 'string' &&
    key !== DEADLINE_HEADER &&
    key.length === DEADLINE_HEADER.length &&
    key.toLowerCase() === DEADLINE_HEADER
  )
}
