import {
  type Deadline,
  lastPlanOf,
  lastPlanUnderOf,
  lastRunStartedOf,
  pendingRunOf,
  pendingRunUnderOf,
  topAbove,
} from './Deadline.js'
import {
  madeAtOf,
  type RunningSliceState,
  runningStateOf,
  type SlicePlan,
  type SliceState,
} from './SlicePlan.js'

/** Deep enough for any chain of deadlines code makes; bounds a hostile one. */
const MAX_DEPTH = 64

/**
 * The name of the slice running, when the time ran out, in the last plan
 * made on `deadline` (`deadline.plan(…)`), else one `run` started in an
 * earlier plan made on it and still pending (the last started first), else
 * in the last plan made on a deadline under it
 * (`deadline.child(100, { observe: true }).plan(…)`: a budget on trial, a
 * cap of the route's own), else one `run` started in an earlier plan under
 * it and still pending (a later plan there having finished), or undefined.
 * Where several run, the one started last. What a server's timeout answer
 * names as `slice`: a plan a route made for itself (`req.deadline.plan(…)`)
 * is as much the request's as one its ingress made, and its running step is
 * the one the time ran out in. So is one made under it: answered
 * `"slice":null`, the 504 hid the step the time ran out in. So is the
 * ingress's own step `run` started, the route having made a plan on the same
 * deadline since: only the last plan on a deadline is kept, and once the
 * route's had nothing running the 504 named none.
 *
 * Not a slice the code left behind: one started with `slice()` and never
 * ended (its step failed and the error was swallowed — no `dispose`, no
 * `end`) stays `running` in its plan's report for good. When the other of
 * the two plans was made after that slice started, or a step `run` started
 * in a plan on the deadline after it (pending or over since), and not
 * inside it (on its deadline or under it, as a slice's own plan is), the
 * code had moved on:
 * the slice is not named. It was, ahead of the later step the time ran out
 * in, or when nothing ran any more. A slice `run` started is never left
 * behind: `run` ends it, so one still running has its step pending (a
 * budget on trial made for part of it is no moving on).
 */
export function runningSlice(deadline: Deadline): string | undefined {
  const own = lastPlanOf(deadline)
  const under = lastPlanUnderOf(deadline)
  const first = runningIn(own, under, deadline)
  if (first !== undefined) return first
  const pending = pendingRunOf(deadline)
  const nested = runningIn(under, own, deadline)
  // Several running: the one started last is the step the time ran out in
  // (a budget on trial made inside an earlier step); named the earlier
  // step, the 504 hid it.
  let name = nested
  let startedAt = nested === undefined ? 0 : ((under && runningStateOf(under)?.startedAt) ?? 0)
  if (pending !== undefined && (name === undefined || pending.startedAt >= startedAt)) {
    name = pending.name
    startedAt = pending.startedAt
  }
  // A step `run` started in an earlier plan under it, still pending, the
  // last plan made there having nothing running (finished since, or made
  // on another deadline under it): only that last plan is kept.
  const pendingUnder = newestPendingUnder(deadline)
  if (pendingUnder !== undefined && (name === undefined || pendingUnder.startedAt > startedAt)) {
    name = pendingUnder.name
  }
  return name
}

/**
 * The newest slice `run` started in a plan made under `deadline` and still
 * pending: from the list kept at the top of its chain (see
 * `pendingRunUnderOf`), the first under `deadline` itself.
 */
function newestPendingUnder(deadline: Deadline): SliceState | undefined {
  const top = topAbove(deadline) ?? deadline
  for (let run = pendingRunUnderOf(top); run !== undefined; run = run.olderUnder) {
    if (run.deadline !== undefined && run.deadline !== deadline && inside(run.deadline, deadline)) {
      return run
    }
  }
  return undefined
}

/**
 * The slice running in `plan`, unless `other` was made, or a step `run`
 * started in a plan on `deadline` (its slice a deadline under it), after it
 * started, outside it.
 */
function runningIn(
  plan: SlicePlan | undefined,
  other: SlicePlan | undefined,
  deadline: Deadline,
): string | undefined {
  if (plan === undefined) return undefined
  const running = runningStateOf(plan)
  if (running === undefined) return undefined
  if (running.run) return running.name
  if (other !== undefined && movedOn(running, madeAtOf(other), other.deadline)) return undefined
  if (movedOn(running, lastRunStartedOf(deadline), deadline)) return undefined
  return running.name
}

/** True when what happened `at`, on `deadline`, came after `running` started, outside it. */
function movedOn(running: RunningSliceState, at: number, deadline: Deadline | undefined): boolean {
  return at > running.startedAt && !inside(deadline, running.deadline)
}

/** True when `deadline` is `slice` or a deadline under it. */
function inside(deadline: Deadline | undefined, slice: Deadline | undefined): boolean {
  // A parent of another installed copy still has a `parent` to walk; a
  // hostile one ends the walk (as `plan()` walks up).
  try {
    let at: unknown = deadline
    for (let depth = 0; depth < MAX_DEPTH; depth++) {
      if (typeof at !== 'object' || at === null) return false
      if (at === slice) return true
      at = (at as { parent?: unknown }).parent
    }
  } catch {}
  return false
}
