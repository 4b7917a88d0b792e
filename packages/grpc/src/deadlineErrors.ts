import { Metadata, type ServerErrorResponse, status } from '@grpc/grpc-js'
import {
  aggregateEndedBy,
  type Deadline,
  describeValue,
  endedBy,
  isAbortError,
  isThenable,
} from '@hourglass/core'
import { grpcChannels } from './channels.js'
import { deadlineOf } from './deadlineOf.js'
import { fromGrpcError } from './fromGrpcError.js'
import { toServiceError } from './toServiceError.js'

type Callback = (error: unknown, value?: unknown, trailer?: unknown, flags?: unknown) => void
type Handler = (call: HandlerCall, callback?: Callback) => unknown
type Emit = (event: string | symbol, ...args: unknown[]) => boolean
type HandlerCall = Parameters<typeof deadlineOf>[0] & { emit: Emit }

/**
 * Wrap a service implementation so the deadline's errors become the right
 * gRPC statuses — the gRPC twin of @hourglass/express's `deadlineErrors()`:
 *
 * - `DeadlineExceededError` (a slice ran out, the call did, an outbound call
 *   did) → `DEADLINE_EXCEEDED` with the `x-deadline-expired: 1` trailer, not
 *   grpc-js's `UNKNOWN` (our codes are strings, gRPC's are numbers);
 *   `ClientClosedError` → `CANCELLED`. An error caused by one of them (its
 *   `cause` chain: llm's `StreamInterruptedError` for a streamed answer cut
 *   by its deadline) maps as that cause.
 * - An `async` handler's rejection (grpc-js ignores the promise a handler
 *   returns: it would be an unhandled rejection, and with the deadline
 *   aborting outbound calls those become common) is answered like a thrown
 *   error: the mapping above; an error, or a status object as `callback`
 *   takes one (`{ code: status.NOT_FOUND, details }`), whose `code` is a
 *   gRPC failure status (an integer 1–16) with that status; anything else —
 *   an HTTP client's `code: 503` too — `UNKNOWN` "Unknown error" (the
 *   message is not sent, as grpc-js does for a thrown error).
 *   A synchronous throw is answered the same way, except that anything
 *   else is left to grpc-js (`UNKNOWN`), as without the wrapper.
 * - An abort or deadline error that arrives after the call's deadline
 *   already ended it (answered `DEADLINE_EXCEEDED`, or the client left) is
 *   swallowed: it is the handler noticing.
 * - One that comes after the handler answered (its callback, a stream's
 *   `end()`) leaves the answer standing: a process warning, not a status.
 *
 * Handlers keep grpc-js's signatures; errors go through the callback (unary,
 * client-streaming) or `call.emit('error')` (server-streaming, bidi), which
 * maps them as the callback does.
 */
export function deadlineErrors<T extends object>(implementation: T): T {
  // grpc-js's addService refuses an implementation that is no object (an
  // import that named nothing: undefined) when the server is set up. Wrapped,
  // it became `{}`, which addService took: the server started and answered
  // every call UNIMPLEMENTED.
  if (typeof implementation !== 'object' || implementation === null) {
    throw new TypeError(
      `deadlineErrors: implementation must be an object (the service's handlers), got ${describeValue(implementation)}`,
    )
  }
  const wrapped: Record<string, unknown> = {}
  for (const name of methodNames(implementation)) {
    const handler = (implementation as Record<string, unknown>)[name]
    wrapped[name] =
      typeof handler === 'function' ? wrap(handler as Handler, implementation) : handler
  }
  return wrapped as T
}

function wrap(handler: Handler, self: object): Handler {
  return function hourglassHandler(call, callback) {
    // A streaming handler answers an error with `call.emit('error', e)`
    // (grpc-js's idiom): mapped from here on, as the callback's. Ours below
    // (`fail`) goes out through the original.
    const emit = typeof callback === 'function' ? undefined : mapEmittedErrors(call)
    // Whether the handler has answered through its callback. An async handler
    // that answers and then rejects (a follow-up write that fails) had its
    // rejection answered too: grpc-js sent that status before the answer's
    // OK, and the client got UNKNOWN instead of the value it was given. (A
    // streaming handler's answer is its end(): see `ended`.)
    let answered = false
    const answer =
      typeof callback === 'function'
        ? (given: unknown, ...rest: unknown[]) => {
            answered = true
            if (!given) {
              callback(given, ...rest)
              return
            }
            const error = judged(given, deadlineOf(call))
            if (!handled(call, error))
              callback(toServiceError(error, deadlineOf(call)) ?? error, ...rest)
          }
        : undefined
    let result: unknown
    try {
      result = answer ? handler.call(self, call, answer) : handler.call(self, call)
    } catch (thrown) {
      const error = judged(thrown, deadlineOf(call))
      // As a rejection below. Thrown after it answered (callback, or a
      // stream's end()), whatever it is, the answer stands: rethrown, grpc-js
      // answered it UNKNOWN, which reached the client before the answer's OK
      // (in place of its value, or of a stream's OK after every message).
      if (handled(call, error)) return
      if (answered || ended(call)) {
        failedAfterAnswer(call, thrown)
        return
      }
      // A gRPC status thrown is sent as one, as a rejected one is. grpc-js
      // answers other thrown errors itself (UNKNOWN).
      const mapped = toServiceError(error, deadlineOf(call)) ?? statusOf(error)
      if (!mapped) throw error
      fail(call, callback, emit, mapped)
      return
    }
    if (isThenable(result)) {
      // `Promise.resolve` reads `then` once and turns a `then` that throws
      // into a rejection, heard below: called bare, its throw escaped to
      // grpc-js, which answered UNKNOWN in place of the handler's OK.
      Promise.resolve(result).then(undefined, (rejected: unknown) => {
        const error = judged(rejected, deadlineOf(call))
        if (handled(call, error)) return
        if (answered || ended(call)) failedAfterAnswer(call, rejected)
        else fail(call, callback, emit, asStatus(error, deadlineOf(call)))
      })
    }
  }
}

/**
 * The error a handler failed with, as it is to be answered: a failed call of
 * the handler's own, made through `deadlineInterceptor()` and passed on as
 * grpc-js gave it (`callback(err)`, an `await` that rejects with it: how
 * grpc-node code forwards a backend's failure), stands for the deadline error
 * behind it, as `fromGrpcError` reads it. Passed on raw, its code and its
 * trailers went out as they came: a `DEADLINE_EXCEEDED` for a cap of the
 * handler's own on that call (`deadline: Date.now() + 100`), answered by a
 * Hourglass backend with `x-deadline-expired: 1`, reached this call's
 * caller with that trailer, which read it as its own budget gone — a 504 "do
 * not retry" 100 ms into a 3 s request — where `callback(fromGrpcError(err))`
 * answered UNKNOWN. Any other error, and a status whose reason is no deadline
 * error (a cancel reason of the caller's own making), is left as it is.
 */
function judged(error: unknown, deadline?: Deadline | undefined): unknown {
  let reason: unknown
  try {
    reason = fromGrpcError(error)
  } catch {
    return error // a revoked Proxy: no status of ours
  }
  if (reason !== error && endedBy(reason) !== undefined) return reason
  // An AggregateError (`Promise.any` over hedged calls), its errors each read
  // as above: answered as what ended them all (core's `aggregateEndedBy`).
  return aggregateEndedBy(error, deadline, readEnded) ?? error
}

/** What ended one error, read as `judged` reads it. */
function readEnded(member: unknown): ReturnType<typeof endedBy> {
  return endedBy(judged(member))
}

/** An AggregateError whose every error is, on its own, the handler noticing (see `handled`). */
function everyNoticed(error: unknown): boolean {
  try {
    if (!(error instanceof AggregateError)) return false
    const errors: unknown = error.errors
    return (
      Array.isArray(errors) &&
      errors.length > 0 &&
      errors.every((member: unknown) => {
        const one = judged(member)
        return endedBy(one) !== undefined || isAbortError(one) || isPrematureClose(one)
      })
    )
  } catch {
    return false
  }
}

/**
 * True when the call's deadline already ended it and `error` is only the
 * handler noticing: a deadline or abort error, or Node's premature close of
 * the call's own stream, which grpc-js destroys once the call is over — what
 * a `for await` over a client-streaming or bidi call, or a `pipeline()`
 * from it, rejects with. Answered, it was a second status after the
 * deadline's, reported as a late write for every upload a deadline cut
 * (as @hourglass/express's `deadlineErrors()` swallows it for a response).
 */
function handled(call: HandlerCall, error: unknown): boolean {
  const deadline = deadlineOf(call)
  const ended = deadline?.done === true && deadline.reason !== undefined
  return (
    ended &&
    (endedBy(error) !== undefined ||
      isAbortError(error) ||
      isPrematureClose(error) ||
      everyNoticed(error))
  )
}

/** Node's `ERR_STREAM_PREMATURE_CLOSE`. Never throws: a revoked `Proxy`, a throwing getter read false. */
function isPrematureClose(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  try {
    return (error as { code?: unknown }).code === 'ERR_STREAM_PREMATURE_CLOSE'
  } catch {
    return false
  }
}

/**
 * A streaming handler's answer is its `end()`: the stream has ended (Node's
 * `writableEnded`), so its OK status is on its way and an error emitted now
 * replaced it — the client, which had every message, got UNKNOWN.
 */
function ended(call: HandlerCall): boolean {
  return (call as { writableEnded?: unknown }).writableEnded === true
}

/**
 * The answer given stands; the error has no caller left to go to. Not left
 * as an unhandled rejection (that ends the process by default), nor dropped
 * unseen: a process warning, with a stable code, and a message on
 * `serverFailedAfterAnswer`, so that metrics see it rise.
 */
function failedAfterAnswer(call: HandlerCall, error: unknown): void {
  const method = (call as { getPath?: () => string }).getPath?.()
  grpcChannels.serverFailedAfterAnswer.publish(() => ({
    deadline: deadlineOf(call),
    method: method ?? 'unknown',
    error,
  }))
  const path = method ?? 'a gRPC method'
  // Not String(): a thrown object whose toString throws would escape as the unhandled rejection avoided here.
  const message = messageOf(error)
  process.emitWarning(`the handler of ${path} rejected after it had answered: ${message}`, {
    type: 'HourglassWarning',
    code: 'HOURGLASS_GRPC_FAILED_AFTER_ANSWER',
    detail: 'The answer it gave was sent; this error was not.',
  })
}

/**
 * An `Error`'s message, else `describeValue`. Never throws: a revoked
 * `Proxy` throws for `instanceof` and `Array.isArray`, a getter for `message`.
 */
function messageOf(error: unknown): string {
  try {
    return error instanceof Error ? String(error.message) : describeValue(error)
  } catch {
    return 'an object whose properties cannot be read'
  }
}

/** `emit`: the call's own, unmapped (see `mapEmittedErrors`): `error` is a status already. */
function fail(
  call: HandlerCall,
  callback: Callback | undefined,
  emit: Emit | undefined,
  error: ServerErrorResponse,
): void {
  if (callback) callback(error)
  else (emit ?? call.emit).call(call, 'error', error)
}

/**
 * Map the errors a streaming handler's call emits as `callback`'s are
 * (see `deadlineErrors`): a failed call of the handler's own passed on as
 * grpc-js gave it stands for the deadline error behind it (`judged`), and a
 * deadline error becomes its status. `call.emit('error', err)` is how
 * grpc-node code relays a backend's failure from a server-streaming or bidi
 * handler: left as it was, the backend's `DEADLINE_EXCEEDED` for a cap of the
 * handler's own on that call, with a Hourglass backend's `x-deadline-expired:
 * 1`, reached the caller, which took it for its own budget gone (an Express
 * edge: 504 "do not retry" 200 ms into a 60 s request), where `callback(err)`
 * answered UNKNOWN. Returns the original `emit`, for statuses made here.
 */
function mapEmittedErrors(call: HandlerCall): Emit | undefined {
  const emit = call.emit
  if (typeof emit !== 'function') return undefined
  call.emit = function emitMapped(this: unknown, event, ...args) {
    if (event === 'error' && args.length > 0) {
      try {
        const error = judged(args[0], deadlineOf(call))
        // The call's deadline already ended it: the handler noticing, as a
        // `callback(e)` or a rejection is (see `handled`), dropped as theirs
        // are. Emitted, grpc-js sent it as a second status, reported as a late
        // write (`sendStatus`) for every stream the deadline cut.
        if (handled(call, error)) return false
        args[0] = toServiceError(error, deadlineOf(call)) ?? error
      } catch {
        // A value whose reads throw (a revoked Proxy): emitted as it came.
      }
    }
    return emit.call(this, event, ...args)
  }
  return emit
}

function asStatus(error: unknown, deadline: Deadline | undefined): ServerErrorResponse {
  const mapped = toServiceError(error, deadline)
  if (mapped) return mapped
  const carried = statusOf(error)
  if (carried) return carried
  return Object.assign(new Error('Unknown error', { cause: error }), {
    code: status.UNKNOWN,
    details: 'Unknown error',
  })
}

/**
 * The gRPC status a rejection carries: an object whose `code` is a failure
 * status — an `Error`, or a status object as `callback` and
 * `call.emit('error')` take one (`{ code: status.NOT_FOUND, details }`),
 * which was answered UNKNOWN "Unknown error" — read once, here, into an error
 * of its own: its `details` (else its `message`, as grpc-js reads them) and
 * its trailer `metadata`. Undefined when it carries none, or when reading it
 * throws (a revoked `Proxy`, a throwing getter): handed to grpc-js as it was,
 * an Error whose `details`, `message` or `metadata` getter threw made grpc-js
 * throw inside the rejection handler — an unhandled rejection that ended the
 * process, and the call went unanswered until its deadline.
 */
function statusOf(error: unknown): ServerErrorResponse | undefined {
  try {
    if (typeof error !== 'object' || error === null) return undefined
    const { code } = error as { code?: unknown }
    if (!isFailureStatus(code)) return undefined
    const { details, message, metadata } = error as {
      details?: unknown
      message?: unknown
      metadata?: unknown
    }
    let text = 'Unknown Error'
    if (typeof details === 'string') text = details
    else if (typeof message === 'string') text = message
    const carried = Object.assign(new Error(text, { cause: error }), { code, details: text })
    // grpc-js clones it to send it: anything else (a plain object of
    // headers) threw there.
    return metadata instanceof Metadata ? Object.assign(carried, { metadata }) : carried
  } catch {
    return undefined
  }
}

/**
 * One of gRPC's failure codes, 1 (`CANCELLED`) to 16 (`UNAUTHENTICATED`).
 * Not 0 (`OK`): sent for a rejection, a failed (for a stream, cut short)
 * call was reported complete, with the message it was never meant to see.
 * Any other number — an HTTP client's 503, an errno — is not a status
 * either: sent as one, the caller reads a code it cannot map.
 */
function isFailureStatus(code: unknown): code is status {
  return typeof code === 'number' && Number.isInteger(code) && code >= 1 && code <= 16
}
/** Own and inherited methods: an implementation may be a class instance. */
function methodNames(implementation: object): Set<string> {
  const names = new Set<string>()
  for (
    let target: object | null = implementation;
    target && target !== Object.prototype;
    target = Object.getPrototypeOf(target)
  ) {
    for (const name of Object.getOwnPropertyNames(target)) {
      if (name !== 'constructor') names.add(name)
    }
  }
  return names
}
