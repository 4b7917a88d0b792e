import { boundingDeadline, type Deadline } from '@hourglass/core'

/**
 * @internal The deadline that bounds a job added (or waited for) under
 * `deadline`: itself, or — for a budget on trial, an observe-only deadline
 * under an enforcing one (`req.deadline.child(100, { observe: true })` inside
 * an enforced request) — the nearest enforcing deadline above it, core's
 * `boundingDeadline`, the rule fetch and the gRPC client refuse and send by.
 * The trial bounds nothing itself: that deadline ends it, and all work under
 * it, when it expires. Taken as the job's, the trial made it a dark-mode job
 * (`observe: true`, the trial's 100 ms): no worker enforced it, not even at
 * the request's deadline, which bounds it without the trial, and a delay
 * past that deadline was added, to run unbounded. Dark mode throughout
 * (nothing enforcing above) is left as it is, observe-only; so is a trial
 * that has ended with a reason (cancelled: its reason is the refusal).
 */
export function enforcingDeadline(deadline: Deadline): Deadline {
  if (!deadline.observe || (deadline.done && deadline.reason !== undefined)) return deadline
  return boundingDeadline(deadline) ?? deadline
}
