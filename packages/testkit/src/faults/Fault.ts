/**
 * What a fault server does with one request. Every delay is in ms on the real
 * clock; `0` means "at once".
 */
export type Fault =
  /** Answer normally, after `delayMs` (default 0) of simulated work. */
  | {
      type: 'respond'
      status?: number
      headers?: Record<string, string>
      body?: string
      delayMs?: number
    }
  /** Send headers, then `chunks` chunks of `chunkBytes` (default 16) every `intervalMs`, then end. */
  | {
      type: 'stream'
      chunks: number
      intervalMs: number
      chunkBytes?: number
      status?: number
      delayMs?: number
    }
  /** Send status and headers at once (after `delayMs`), then never a body byte. */
  | {
      type: 'headers-then-stall'
      status?: number
      headers?: Record<string, string>
      delayMs?: number
    }
  /** Send headers announcing `declaredBytes` (default bytes × 10, at least 1; more than `bytes`), send `bytes` of body, then stall. */
  | { type: 'bytes-then-stall'; bytes: number; declaredBytes?: number; delayMs?: number }
  /** Close the socket (FIN) after `delayMs` without answering. */
  | { type: 'close'; delayMs?: number }
  /** Reset the socket (RST) after `delayMs` without answering. */
  | { type: 'reset'; delayMs?: number }
  /**
   * A rate-limit or overload answer with `Retry-After`: a number is seconds, a
   * `Date` is sent as an HTTP-date.
   */
  | {
      type: 'retry-after'
      status: 429 | 503 | 529
      retryAfter: number | Date
      body?: string
      headers?: Record<string, string>
    }
  /** Hold the connection open and never answer. */
  | { type: 'hang' }

/** A fixed fault for every request, or one chosen per request (`index` counts from 0). */
export type FaultPlan = Fault | ((request: FaultRequest, index: number) => Fault)

/** What a plan function sees of the request. */
export interface FaultRequest {
  method: string
  url: string
  headers: Record<string, string | string[] | undefined>
}
