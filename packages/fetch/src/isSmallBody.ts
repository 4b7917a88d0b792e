/**
 * The largest declared body of a retried answer that is read to its end
 * rather than cancelled (undici's `body.dump()` reads up to 128 KiB before it
 * gives a connection up).
 */
export const DRAIN_LIMIT_BYTES = 64 * 1024

/**
 * A retried answer worth reading to its end, so its connection is kept for
 * the retry (as undici's RetryHandler reads a retried answer): a declared
 * `Content-Length` of at most `DRAIN_LIMIT_BYTES`. A body of unknown length
 * (chunked, or ended by the close) may never end, and is cancelled.
 */
export function isSmallBody(contentLength: string | null | undefined): boolean {
  if (contentLength == null) return false
  const length = contentLength.trim()
  return /^\d+$/.test(length) && Number(length) <= DRAIN_LIMIT_BYTES
}
