import { type Deadline, lastPlanOf } from './Deadline.js'

/**
 * The name of the slice running, when the time ran out, in the last plan
 * made on `deadline` (`deadline.plan(…)`), or undefined. What a server's
 * timeout answer names as `slice`: a plan a route made for itself
 * (`req.deadline.plan(…)`) is as much the request's as one its ingress
 * made, and its running step is the one the time ran out in.
 */
export function runningSlice(deadline: Deadline): string | undefined {
  return lastPlanOf(deadline)
    ?.report()
    .find((row) => row.outcome === 'running')?.name
}
