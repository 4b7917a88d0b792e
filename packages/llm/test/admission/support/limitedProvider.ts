import { once } from 'node:events'
import { createServer, type Server } from 'node:http'

export interface LimitedProviderOptions {
  /** How long the provider rate-limits once the first request arrives, in ms. */
  windowMs: number
  /** `retry-after` sent with each 429, in whole seconds. */
  retryAfterS: number
  /** Only these keys are limited (all when absent). */
  limitedKeys?: string[]
  /** Time to answer a success, in ms (server-side work, not a test sleep). */
  latencyMs?: number
  /**
   * Where the provider's time comes from (its window, `latencyMs`, the
   * records' `at`): the process's by default; a test's `ManualClock` through
   * `startLimitedProviderOn` (support/waitClock.ts).
   */
  time?: { now(): number; after(ms: number, callback: () => void): void }
}

const realTime = {
  now: () => performance.now(),
  after: (ms: number, callback: () => void) => {
    setTimeout(callback, ms)
  },
}

export interface LimitedProvider {
  url: string
  /** Every request received, with the key it carried and what it got. */
  requests: Array<{ key: string; status: number; at: number }>
  close(): Promise<void>
}

/**
 * A provider that answers 429 (`retry-after`) to every request carrying a
 * limited key while its window is open, and 200 otherwise: the shape of a
 * real per-key rate limit, on 127.0.0.1.
 */
export async function startLimitedProvider(
  options: LimitedProviderOptions,
): Promise<LimitedProvider> {
  const time = options.time ?? realTime
  let windowStart: number | undefined
  const requests: LimitedProvider['requests'] = []
  const server: Server = createServer((req, res) => {
    const key = String(req.headers.authorization ?? '').replace(/^Bearer /, '')
    const now = time.now()
    const limitedKey = !options.limitedKeys || options.limitedKeys.includes(key)
    if (limitedKey) windowStart ??= now
    const inWindow = limitedKey && windowStart !== undefined && now - windowStart < options.windowMs
    req.resume()
    if (inWindow) {
      requests.push({ key, status: 429, at: now })
      res.writeHead(429, {
        'content-type': 'application/json',
        'retry-after': String(options.retryAfterS),
      })
      res.end(JSON.stringify({ error: { type: 'rate_limit_error', message: 'slow down' } }))
      return
    }
    requests.push({ key, status: 200, at: now })
    const answer = () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ choices: [{ message: { content: 'ok' } }] }))
    }
    if (options.latencyMs) time.after(options.latencyMs, answer)
    else answer()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}/v1/chat/completions`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
