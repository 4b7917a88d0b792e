import { fieldOf, isError } from '@hourglass/core'

/** The most of the cause's stack kept: a stack is whatever its error says, and BullMQ stores it in Redis per attempt. */
const MAX_CAUSE_STACK = 16 * 1024

/**
 * @internal `error` with the stack of the failure it stands for appended to
 * its own, after `Caused by: ` (as Java and VError print a cause): the error
 * a worker hands BullMQ for a job its deadline ended, running or on a
 * retry that would not fit. BullMQ records `err.stack` alone as the job's
 * `stacktrace`, which Bull Board and similar dashboards show, and ours holds
 * withDeadline's own frames only: where the processor was when its deadline
 * stopped it, or where the failure not retried was thrown — what plain
 * BullMQ showed — was lost. Reads that throw (a revoked Proxy, a `stack`
 * getter that throws) leave the error as it is.
 */
export function withCauseStack<E extends Error>(error: E, cause: unknown): E {
  if (!isError(cause)) return error
  const causeStack = fieldOf(cause, 'stack')
  const own = fieldOf(error, 'stack')
  if (typeof causeStack !== 'string' || causeStack === '' || typeof own !== 'string') return error
  const kept =
    causeStack.length > MAX_CAUSE_STACK ? `${causeStack.slice(0, MAX_CAUSE_STACK)}…` : causeStack
  error.stack = `${own}\nCaused by: ${kept}`
  return error
}
