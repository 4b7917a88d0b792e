import type { HeaderInput } from './errorHeaders.js'

/** One provider response, as an error normaliser sees it. */
export interface ErrorInput {
  /** HTTP status as received. */
  status: number
  headers?: HeaderInput | undefined
  /** The response body as text: possibly empty, possibly not JSON, possibly hostile. */
  body: string
  /**
   * The body already parsed with `parseJson` (undefined: not JSON), when the
   * caller has it: a 2xx body is read for an error and then as the answer,
   * and parsing it once saves a JSON.parse per call.
   */
  json?: unknown
  /** Wall-clock "now" for HTTP-date and RFC 3339 hints and a per-day quota's reset. Default `Date.now()`. */
  nowMs?: number | undefined
}

/** One SSE event received after an HTTP 200, as a stream error normaliser sees it. */
export interface StreamErrorInput {
  event: string | undefined
  data: string
}
