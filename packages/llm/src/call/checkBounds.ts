import { describeValue, isAbortSignal, isDeadline } from '@hourglass/core'

/**
 * Refuses a `deadline` that is no `Deadline` (`false` is none; `null`, like
 * `undefined`, the ambient one: see callDeadline) and a `signal` that is no
 * `AbortSignal` (`null` is none), naming the option and the call — before
 * anything is read or run. One check for callModel, runTurns and
 * sideEffect: a number of ms for `deadline` (`deadline: 5000`), or the
 * controller for `signal`, failed later as "this.deadline?.throwIfExpired is
 * not a function" or untilEnded's "signal must be an AbortSignal", naming
 * neither the option nor the call.
 */
export function checkBounds(
  where: string,
  options: { deadline?: unknown; signal?: unknown },
): void {
  const { deadline, signal } = options
  if (deadline != null && deadline !== false && !isDeadline(deadline)) {
    throw new TypeError(
      `${where}: deadline must be a Deadline (Deadline.after(ms)) or false, got ${describeValue(deadline)}`,
    )
  }
  if (signal != null && !isAbortSignal(signal)) {
    throw new TypeError(
      `${where}: signal must be an AbortSignal (controller.signal), got ${describeValue(signal)}`,
    )
  }
}
