import type { Deadline } from './Deadline.js'

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
  deadline: Deadline | undefined,
  observedMs = Number.POSITIVE_INFINITY,
): Deadline | undefined {
  for (let d = deadline; d !== undefined; d = d.parent) {
    if (!d.observe) return d
    const left = d.remaining()
    if (!Number.isFinite(left)) return undefined
    if (left >= observedMs) return d
  }
  return undefined
}
