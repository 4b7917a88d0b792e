import type { ServerResponse } from 'node:http'
import { setImmediate } from 'node:timers'
import { type Clock, wait } from '@hourglass/core'

/**
 * Waits `ms` on `clock` (core's one wait); resolves false (early) when
 * `signal` aborts. Any other failure of the wait is thrown: read as the
 * client leaving, it stopped the reply with its response never ended.
 */
export function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false)
  if (!(ms > 0)) return Promise.resolve(true)
  return wait(ms, { clock, signal }).then(
    () => true,
    (error: unknown) => {
      if (signal.aborted) return false
      throw error
    },
  )
}

/**
 * Writes `text`, whole or in `splitBytes`-sized pieces — cut on bytes, not
 * characters, so a multi-byte character can straddle two TCP segments as it
 * does on real networks. Resolves false when the response went away.
 */
export async function writePaced(
  res: ServerResponse,
  text: string | Buffer,
  options: { splitBytes?: number | undefined; writeGapMs?: number | undefined },
  clock: Clock,
  signal: AbortSignal,
): Promise<boolean> {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text
  const size =
    options.splitBytes !== undefined && options.splitBytes > 0 ? options.splitBytes : bytes.length
  for (let at = 0; at < bytes.length; at += size) {
    if (signal.aborted || res.destroyed) return false
    if (at > 0) {
      const gap = options.writeGapMs ?? 0
      if (gap > 0) {
        if (!(await pause(clock, gap, signal))) return false
      } else {
        // A turn of the real loop, not a delay: `node:timers`' own
        // setImmediate, which fake timers (`vi.useFakeTimers()`, Jest's) do
        // not replace as they do the global. With the global, a reply cut
        // by `splitBytes` never finished in a test that faked time.
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    if (!(await write(res, bytes.subarray(at, at + size), signal))) return false
  }
  return !signal.aborted
}

/**
 * Writes one piece and waits for it to be flushed — or for the client to go
 * away: a socket destroyed mid-write may never call the write callback, and
 * waiting for it would keep the response (and its socket) alive for good.
 */
function write(res: ServerResponse, chunk: Buffer, signal: AbortSignal): Promise<boolean> {
  if (res.destroyed || signal.aborted) return Promise.resolve(false)
  return new Promise((resolve) => {
    const onGone = () => resolve(false)
    signal.addEventListener('abort', onGone, { once: true })
    res.write(chunk, (error) => {
      signal.removeEventListener('abort', onGone)
      resolve(error == null)
    })
  })
}
