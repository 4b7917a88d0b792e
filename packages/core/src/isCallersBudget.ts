import type { ReadDeadlineResult } from './readDeadline.js'

/**
 * Whether a budget `readDeadline` read is the caller's own: it came from a
 * trusted header (`source`) and was not cut to the server's `maxMs`
 * (`clamped`; the servers that ask this set no `minMs`, so a clamp is a
 * cut). Only the end of such a budget — or of a slice or child of it —
 * says the caller's budget is gone too (`x-deadline-expired`); a cap of
 * the server's own (`maxMs` below what it sent, `defaultMs` when it sent
 * none) leaves the caller its time. The one rule `@hourglass/express`'s
 * `deadline()` and `@hourglass/grpc`'s server interceptor mark by.
 */
export function isCallersBudget(read: Pick<ReadDeadlineResult, 'source' | 'clamped'>): boolean {
  return read.source !== undefined && !read.clamped
}
