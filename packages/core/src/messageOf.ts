import { describeValue } from './describeValue.js'

/**
 * A thrown value's or an abort reason's message, for a line of text: an
 * Error's `message`, anything else as `String` writes it. Never throws. A
 * deadline is cancelled with whatever its caller's `AbortController` was
 * aborted with (`Deadline.after(ms, { signal })`), and a processor may reject
 * with anything: `String()` of an object with no prototype, an Error whose
 * `message` getter throws or a revoked Proxy (whose `instanceof` throws too)
 * threw out of the code writing the message — in an abort listener, reported
 * as uncaught, with the work it was stopping left running. Such a value
 * reads as `describeValue` shows it (`an object`).
 */
export function messageOf(value: unknown): string {
  try {
    return value instanceof Error ? String(value.message) : String(value)
  } catch {
    return describeValue(value)
  }
}
