import {
  type Deadline,
  endedBy,
  fieldOf,
  isDeadlineExceeded,
  isError,
  isExpiryOf,
  MAX_RESERVE_MS,
} from '@hourglass/core'
import { isDelayRefusal } from './guardDelay.js'

/** gRPC's `DEADLINE_EXCEEDED` status code (this package does not depend on grpc-js). */
const GRPC_DEADLINE_EXCEEDED = 4

/**
 * Where `@hourglass/grpc`'s client puts the Hourglass error behind a status
 * (its `fromGrpcError` reads it; grpc-js copies it onto the `ServiceError`).
 * A global symbol: read whichever installed copy of grpc put it there.
 */
const GRPC_REASON = Symbol.for('@hourglass/grpc.reason')

/**
 * @internal The attempt failed because a service it called ran out of the
 * job's deadline, a moment before the job's own timer did: within
 * `MAX_RESERVE_MS` (100 ms, the largest reserve an ingress keeps) of the
 * job's end, its error is a deadline error of the job's line (in its
 * `cause` chain: `@hourglass/grpc`'s `fromGrpcError`, llm's stream errors)
 * or a gRPC `DEADLINE_EXCEEDED` status as grpc-js hands it over. A server
 * under `deadlineServerInterceptor()` answers for the budget it was sent
 * `reserveMs` (10–100 ms) before it ends, with `x-deadline-expired: 1`: the
 * caller's budget is gone too. Taken for an ordinary failure, BullMQ retried
 * it with those few ms — with `attempts: 5` and no back-off, five calls to a
 * server that answered each one DEADLINE_EXCEEDED, the last arriving
 * already expired, and the job failed with the status's message (a plain
 * error to its producer: 500, not 504), counted nowhere. Near its end a
 * deadline error leaves the job no time either, as `@hourglass/grpc`'s
 * client and `fromJobError` count it. One known to be an unrelated
 * deadline's (core's `markForeignExpiry`, or a shorter deadline of the
 * call's own) is not the job's.
 */
export function isExpiryToldEarly(error: unknown, deadline: Deadline): boolean {
  if (deadline.done || deadline.remaining() > MAX_RESERVE_MS) return false
  // A status from `@hourglass/grpc`'s client carries the deadline error it
  // stands for: judged as `fromGrpcError` would read it. A bare status of a
  // call under a shorter deadline of its own (a `Deadline.after(30)` around
  // it) was stopped as the job's, while the same error read back was retried.
  const reason = fieldOf(error, GRPC_REASON)
  const told = endedBy(error) ?? endedBy(reason)
  // guardDelay's refusal of a `moveToDelayed` (the job's deadline error, made
  // before it ended) is no service's news of its end: the job is still
  // active, and the refusal fails it as a retry that does not fit.
  if (told !== undefined)
    return isDeadlineExceeded(told) && !isDelayRefusal(told) && isExpiryOf(told, deadline)
  if (reason !== undefined) return false
  // Read without a throw (a revoked Proxy, a throwing getter): such a value is no status.
  return (
    isError(error) &&
    fieldOf(error, 'code') === GRPC_DEADLINE_EXCEEDED &&
    typeof fieldOf(error, 'details') === 'string'
  )
}
