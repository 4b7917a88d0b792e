import {
  DEADLINE_HEADER,
  type Deadline,
  GRPC_TIMEOUT_HEADER,
  grpcTimeoutValue,
  isDeadlineExceeded,
  writeDeadline,
} from '@hourglass/core'

/**
 * Make the deadline headers an attempt wrote (`withDeadlineHeader`, always a
 * fresh record or array of ours) say what is left whenever they are read,
 * not only when the attempt was dispatched. undici reads a request's headers
 * as it builds it; a layer beneath ours that sends the same options again
 * builds a new request from them later: undici's retry interceptor (and
 * `RetryAgent`) after its back-off, its redirect interceptor for the next
 * hop; undici's dns interceptor builds it only once its lookup answers.
 * Written once, such a send told the server the first send's budget:
 * `2998` after a 1 s `Retry-After`, with ~1950 ms left, so it worked past
 * the caller's deadline. Called once the dispatch has returned (what it
 * read was the value written, the one the attempt's event names): a later
 * read is what `writeDeadline` would write then (none once it would write
 * none: an observe-only deadline passed). A layer that copies the headers
 * (a resume's `{ ...headers, range }`) reads them as it copies, just
 * before it sends.
 */
export function keepDeadlineHeaderCurrent(headers: unknown, deadline: Deadline): void {
  if (typeof headers !== 'object' || headers === null) return
  const target = headers as Target
  target[DEADLINE_OF] = deadline
  if (Array.isArray(headers)) {
    // Ours are the pairs named exactly so (any of the caller's were dropped under a deadline).
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (headers[i] === DEADLINE_HEADER) current(target, i + 1, false)
      else if (headers[i] === GRPC_TIMEOUT_HEADER) current(target, i + 1, true)
    }
    return
  }
  if (Object.hasOwn(target, DEADLINE_HEADER)) current(target, DEADLINE_HEADER, false)
  if (Object.hasOwn(target, GRPC_TIMEOUT_HEADER)) current(target, GRPC_TIMEOUT_HEADER, true)
}

/**
 * Once the attempt is over, nothing beneath sends for it any more: the
 * headers keep what they were last read as — what went out last. A record
 * of them kept past the call (a `MockAgent`'s call history holds the very
 * object) says what was sent, not what is left now (nothing, once the
 * deadline is disposed). A flag, not plain values again: redefining them
 * doubled the cost of an attempt's headers. An attempt the deadline ended
 * (its time up, or cancelled) keeps what the deadline writes now (`0`),
 * which no longer changes: undici's retry interceptor may still resume its broken
 * body beneath after a back-off, past the deadline that ended the call, and
 * that send is told nothing is left, not the first send's budget.
 */
export function settleDeadlineHeader(headers: unknown, deadline: Deadline, error: unknown): void {
  if (typeof headers !== 'object' || headers === null) return
  const target = headers as Target
  // Ended with a reason (its time up, or cancelled), or the attempt ended as
  // the deadline's a moment before it fires (a phase limit within a ms of
  // it): nothing is left. Not a dark-mode deadline that has merely passed:
  // it ended nothing, and what was sent stays.
  if ((deadline.done && deadline.reason !== undefined) || isDeadlineExceeded(error)) {
    target[LAST_REMAINING] = '0'
    target[LAST_GRPC] = grpcTimeoutValue(0)
  }
  target[SETTLED] = true
}

type Target = Record<string | symbol, unknown>

function current(target: Target, key: string | number, grpc: boolean): void {
  target[grpc ? LAST_GRPC : LAST_REMAINING] = target[key]
  const descriptor = typeof key === 'number' ? slotDescriptor(key, grpc) : grpc ? GRPC : REMAINING
  Object.defineProperty(target, key, descriptor)
}

/**
 * The deadline a headers object of ours is read against, the values last
 * read, and whether its attempt is over. Symbols: no layer that reads
 * header names (undici reads a record's string keys) sees them, and a copy
 * (`{ ...headers }`) carries them harmlessly.
 */
const DEADLINE_OF = Symbol('@hourglass/fetch.headersDeadline')
const LAST_REMAINING = Symbol('@hourglass/fetch.lastRemaining')
const LAST_GRPC = Symbol('@hourglass/fetch.lastGrpcTimeout')
const SETTLED = Symbol('@hourglass/fetch.headersSettled')

/**
 * Shared accessors, `this` the headers object: no closure per attempt
 * (measured: ~0.9 µs an attempt this way, over 3 µs with a getter made per
 * attempt and plain values put back at its end). A layer beneath that writes
 * the header in place (an interceptor capping the budget it passes on:
 * `opts.headers['x-deadline-remaining-ms'] = '1000'`, `Object.assign`) sets
 * a plain value there, as before: with a getter alone the write threw a
 * TypeError in strict code and the request failed.
 */
const REMAINING: PropertyDescriptor = {
  get: remainingNow,
  set(this: Target, value: unknown) {
    Object.defineProperty(this, DEADLINE_HEADER, plain(value))
  },
  enumerable: true,
  configurable: true,
}
const GRPC: PropertyDescriptor = {
  get: grpcTimeoutNow,
  set(this: Target, value: unknown) {
    Object.defineProperty(this, GRPC_TIMEOUT_HEADER, plain(value))
  },
  enumerable: true,
  configurable: true,
}

function remainingNow(this: Target): unknown {
  if (this[SETTLED] === true) return this[LAST_REMAINING]
  const ms = writeDeadline({}, this[DEADLINE_OF] as Deadline)
  const value = ms === undefined ? undefined : String(ms)
  this[LAST_REMAINING] = value
  return value
}

function grpcTimeoutNow(this: Target): unknown {
  if (this[SETTLED] === true) return this[LAST_GRPC]
  const ms = writeDeadline({}, this[DEADLINE_OF] as Deadline)
  const value = ms === undefined ? undefined : grpcTimeoutValue(ms)
  this[LAST_GRPC] = value
  return value
}

/**
 * An array's value slot: a descriptor per index, made once and shared,
 * whose setter makes its own slot a plain value. Not found by name: an
 * `unshift` or `splice` beneath moves the array's values through the slot
 * (a set of the value moved in, while the name is copied along), and a
 * setter that looked for the slot named so wrote a neighbour's value — a
 * credential — into the deadline header.
 */
function slotDescriptor(index: number, grpc: boolean): PropertyDescriptor {
  const made = grpc ? GRPC_AT : REMAINING_AT
  let descriptor = made[index]
  if (descriptor === undefined) {
    const key = String(index)
    descriptor = {
      get: grpc ? grpcTimeoutNow : remainingNow,
      set(this: Target, value: unknown) {
        Object.defineProperty(this, key, plain(value))
      },
      enumerable: true,
      configurable: true,
    }
    made[index] = descriptor
  }
  return descriptor
}

const REMAINING_AT: PropertyDescriptor[] = []
const GRPC_AT: PropertyDescriptor[] = []

function plain(value: unknown): PropertyDescriptor {
  return { value, writable: true, enumerable: true, configurable: true }
}
