import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'

// Node's global `Request` is rebuilt as undici's (adoptRequest), and its
// cache mode was left behind: `new Request(url, { cache: 'no-store' })`
// went out without the `pragma: no-cache` / `cache-control: no-cache` that
// Node's own fetch (and createFetch given `init.cache`) sends for it, so a
// proxy or CDN in between could answer from its cache a call that asked
// for a fresh answer.

let server: Server | undefined
afterEach(async () => {
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** Node 20's RequestInit type has no `cache` (its Request has it, and takes it). */
function withCache(init: { cache: string; mode?: string }): globalThis.RequestInit {
  return init as globalThis.RequestInit
}

async function recording(): Promise<{ url: string; seen: IncomingMessage['headers'][] }> {
  const seen: IncomingMessage['headers'][] = []
  server = createServer((req, res) => {
    seen.push(req.headers)
    res.end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/path`, seen }
}

it.each([
  ['no-store', { pragma: 'no-cache', 'cache-control': 'no-cache' }],
  ['reload', { pragma: 'no-cache', 'cache-control': 'no-cache' }],
  ['no-cache', { 'cache-control': 'max-age=0' }],
] as const)(
  "a global Request made with cache: '%s' sends the headers fetch sends for it",
  async (cache, expected) => {
    const { url, seen } = await recording()
    const fetch = createFetch()
    try {
      const res = await fetch(new globalThis.Request(url, withCache({ cache })), {
        deadline: Deadline.after(5000),
      })
      expect(await res.text()).toBe('ok')
    } finally {
      await fetch.close()
    }
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject(expected)
  },
)

// `only-if-cached` is allowed only with `mode: 'same-origin'` (Request's own
// rule): carried over without its mode, rebuilding the Request would throw.
it("a global Request made with cache: 'only-if-cached' (mode: 'same-origin') is sent as fetch sends it", async () => {
  const { url, seen } = await recording()
  const fetch = createFetch()
  try {
    const res = await fetch(
      new globalThis.Request(url, withCache({ cache: 'only-if-cached', mode: 'same-origin' })),
      { deadline: Deadline.after(5000) },
    )
    expect(await res.text()).toBe('ok')
  } finally {
    await fetch.close()
  }
  expect(seen).toHaveLength(1)
})
