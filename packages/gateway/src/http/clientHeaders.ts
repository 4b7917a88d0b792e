import { type DeadlineSource, readDeadline, trimOws } from '@hourglass/core'

/** `x-stainless-timeout`, as core's `DeadlineSource` (the header the openai SDK sends). */
export const STAINLESS_TIMEOUT: DeadlineSource = 'x-stainless-timeout'
/**
 * openai-python's (and the other Python Stainless SDKs') per-attempt
 * timeout: its httpx read timeout, in seconds as Python prints the number
 * (`600.0`, its default; `20` for `timeout=20`), exact — not truncated, as
 * openai-node's `x-stainless-timeout` is. It is sent on every request, and
 * `x-stainless-timeout` never is (LangChain's `ChatOpenAI(timeout=…)` sends
 * it too). The wait for the response's headers is a read, so it bounds what
 * the gateway's `answerBy` bounds: a whole answer, a stream's first event —
 * counted from the end of the request's body, when httpx starts it.
 */
export const STAINLESS_READ_TIMEOUT = 'x-stainless-read-timeout'
const RETRY_COUNT = /^[0-9]{1,4}$/
/** Decimal seconds as Python's `str()` writes a timeout; an exponent (`1e-05`) or `inf` is not read. */
const PYTHON_SECONDS = /^([0-9]{1,10})(?:\.([0-9]+))?$/

/** The client SDK's own per-attempt timeout, in ms, by when its timer starts. */
export interface ClientTimeouts {
  /**
   * `X-Stainless-Timeout` (openai-node: whole seconds, core's rules — a
   * whole N, truncated by the SDK, is read as N + 1 s less 1 ms, the most
   * the client's timer can be; 0 is a truncated sub-second timeout and
   * ignored), clamped to `maxMs`. Its timer starts before the request is
   * sent: counted from the request's head.
   */
  fromHeadMs: number | undefined
  /**
   * `X-Stainless-Read-Timeout` (openai-python: exact seconds, 0 ignored),
   * clamped to `maxMs`. httpx sends the headers and the body under its
   * write timeout and starts this one only once the body is out: counted
   * from the end of the body. From the head, a `timeout=2` client whose
   * 30 KB body took 1.5 s to upload got a 504 0.5 s after it, where it
   * would have waited 2 s for its answer.
   */
  afterBodyMs: number | undefined
}

/**
 * The SDK's own per-attempt timeout, both headers read; the smaller end
 * wins (`RequestTracker`). Without the Python one, a Python client's
 * timeout was not known: a wait before sending (a cooldown, an RPM window)
 * was taken past it, and the client timed out with nothing and sent the
 * request again (its SDK retries a timeout twice), each attempt sent and
 * billed, where it gets a 429 with `Retry-After` at once (or the gateway's
 * 504 `deadline_exceeded`, `x-should-retry: false`, just before its
 * timer). `headers` are Node's, names lower case.
 */
export function clientTimeouts(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  maxMs: number,
): ClientTimeouts {
  const fromHeadMs = readDeadline(headers, {
    sources: [STAINLESS_TIMEOUT],
    maxMs,
    lowerCaseNames: true,
  }).ms
  const python = clientReadTimeoutMs(headers)
  return { fromHeadMs, afterBodyMs: python === undefined ? undefined : Math.min(python, maxMs) }
}

/**
 * openai-python's `X-Stainless-Read-Timeout` in whole ms, rounded down;
 * undefined when absent, 0 or malformed. `headers` are Node's, names lower case.
 */
export function clientReadTimeoutMs(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): number | undefined {
  const header = headers[STAINLESS_READ_TIMEOUT]
  if (typeof header !== 'string') return undefined
  // HTTP's optional whitespace only, as core reads its headers.
  const match = PYTHON_SECONDS.exec(trimOws(header))
  if (match === null) return undefined
  // Whole ms, rounded down: never grant more than the client gives.
  const ms = Number(match[1]) * 1000 + Number((match[2] ?? '').slice(0, 3).padEnd(3, '0'))
  return ms === 0 ? undefined : ms
}

/** `X-Stainless-Retry-Count`: 0 on a first attempt, n on the SDK's n-th retry; 0 when absent or malformed. */
export function clientRetryCount(header: string | string[] | undefined): number {
  if (typeof header !== 'string') return 0
  const value = header.trim()
  return RETRY_COUNT.test(value) ? Number(value) : 0
}
