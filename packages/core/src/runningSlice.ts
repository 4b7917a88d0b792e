import { type Deadline, lastPlanOf, lastPlanUnderOf } from './Deadline.js'

/**
 * The name of the slice running, when the time ran out, in the last plan
 * made on `deadline` (`deadline.plan(…)`), else in the last plan made on a
 * deadline under it (`deadline.child(100, { observe: true }).plan(…)`: a
 * budget on trial, a cap of the route's own), or undefined. What a server's
 * timeout answer names as `slice`: a plan a route made for itself
 * (`req.deadline.plan(…)`) is as much the request's as one its ingress
 * made, and its running step is the one the time ran out in. So is one made
 * under it: answered `"slice":null`, the 504 hid the step the time ran out
 * in.
 */
export function runningSlice(deadline: Deadline): string | undefined {
  return runningIn(lastPlanOf(deadline)) ?? runningIn(lastPlanUnderOf(deadline))
}

function runningIn(plan: ReturnType<typeof lastPlanOf>): string | undefined {
  return plan?.report().find((row) => row.outcome === 'running')?.name
}
