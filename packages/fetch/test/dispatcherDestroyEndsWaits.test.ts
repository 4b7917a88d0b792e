import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { nextRetry, useHttpServer } from './helpers.js'

const listen = useHttpServer()

/** Answers every request 503 with Retry-After: 30. */
async function busy(): Promise<{ url: string; requests: () => number }> {
  let requests = 0
  const base = await listen((_req, res) => {
    requests++
    res.writeHead(503, { 'retry-after': '30' }).end('busy')
  })
  return {
    url: `${base}/`,
    requests: () => requests,
  }
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

/**
 * The README sends a caller whose bodies may be held unread to
 * `fetch.dispatcher.destroy()` in place of `fetch.close()`: that must end a
 * call waiting to retry as `close()` does, not leave it asleep for the rest
 * of its Retry-After (keeping the process up) to fail then.
 */
describe("the dispatcher of createFetch's own Agent", () => {
  it.each([
    ['destroy', 'UND_ERR_DESTROYED'],
    ['close', 'UND_ERR_CLOSED'],
  ] as const)(
    'fetch.dispatcher.%s() ends a call waiting to retry at once (%s), sending nothing more',
    async (method, code) => {
      const { url, requests } = await busy()
      // A manual clock nobody moves: the 30 s wait ends by the dispatcher or never.
      const fetch = createFetch({ retry: { statuses: [503] }, clock: new ManualClock() })
      const retried = nextRetry()
      const call = fetch(url).then(
        () => 'answered',
        (error: unknown) => error,
      )
      expect(await retried).toMatchObject({ reason: 'HTTP_503', delayMs: 30_000 })
      await fetch.dispatcher[method]()
      const settled = await Promise.race([call, turns(1000).then(() => 'still waiting to retry')])
      expect(settled).toMatchObject({
        code,
        message: expect.stringContaining(`fetch.dispatcher.${method}()`),
      })
      expect(requests()).toBe(1)
    },
  )
})

it('fetch.close() after fetch.dispatcher.destroy() resolves: a shutdown hook may call both', async () => {
  const { url } = await busy()
  const fetch = createFetch()
  await fetch(url).then((res) => res.body?.cancel())
  await fetch.dispatcher.destroy()
  await expect(fetch.close()).resolves.toBeUndefined()
  await expect(fetch.close()).resolves.toBeUndefined()
})
