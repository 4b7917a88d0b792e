import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { nextRetry } from './helpers.js'

let server: Server | undefined
afterEach(async () => {
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** Answers every request 503 with Retry-After: 30. */
async function busy(): Promise<{ url: string; requests: () => number }> {
  let requests = 0
  server = createServer((_req, res) => {
    requests++
    res.writeHead(503, { 'retry-after': '30' }).end('busy')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
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
