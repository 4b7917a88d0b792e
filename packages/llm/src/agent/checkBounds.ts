import { describeValue, isAbortSignal, isDeadline } from '@hourglass/core'

/**
 * Refuses a `deadline` that is no `Deadline` (`false` and `null` are none)
 * and a `signal` that is no `AbortSignal`, naming the option as `callModel`
 * does — before anything is read or run. A number of ms for `deadline`
 * (`deadline: 5000`), or the controller for `signal`, failed later as
 * "this.deadline?.throwIfExpired is not a function" or untilEnded's
 * "signal must be an AbortSignal", naming neither the option nor the call.
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
