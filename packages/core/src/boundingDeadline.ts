import type { Deadline } from './Deadline.js'
import { describeValue } from './describeValue.js'
import { isDeadline } from './isDeadline.js'

/**
 * The deadline whose time bounds work done under `deadline`: `deadline`
 * itself when it enforces, else the nearest above it that enforces — or,
 * observe-only, still has at least `observedMs` left (by default none
 * counts: dark mode bounds nothing). Undefined when none does: dark mode all
 * the way up, or a deadline on the way that never expires (`never()`, or one
 * disposed while live: nothing above it ends its work any more).
 *
 * An observe-only deadline under an enforcing one — a budget on trial inside
 * an enforced request, `req.deadline.child(100, { observe: true })` — is
 * ended when that one expires, so the work under it is bounded by it: what
 * to refuse, to plan with, to give the next hop. Read off the trial alone
 * (dark mode, no bound), its header went out empty once its own time had
 * passed, retries planned with Infinity, and fetch and the gRPC client sent
 * calls the request had no time left for. One rule for core's
 * `writeDeadline` and `enforcedRemaining`, fetch and the gRPC client.
 */
export function boundingDeadline(
  deadline: Deadline | null | undefined,
  observedMs = Number.POSITIVE_INFINITY,
): Deadline | undefined {
  // Checked at the call: a number of ms where the Deadline belongs was
  // returned as its own bound (`boundingDeadline(5)` read 5, and whatever
  // took it failed later with "remaining is not a function"), and an
  // `observedMs` that is no number ('1' from an environment variable)
  // compared false with every figure: no observe-only deadline counted.
  if (deadline != null && !isDeadline(deadline)) {
    throw new TypeError(
      `boundingDeadline: deadline must be a Deadline, got ${describeValue(deadline)}`,
    )
  }
  if (typeof observedMs !== 'number' || Number.isNaN(observedMs)) {
    throw new TypeError(
      `boundingDeadline: observedMs must be a number, got ${describeValue(observedMs)}`,
    )
  }
  for (let d = deadline ?? undefined; d !== undefined; d = d.parent) {
    if (!d.observe) return d
    const left = d.remaining()
    if (!Number.isFinite(left)) return undefined
    if (left >= observedMs) return d
  }
  return undefined
}
