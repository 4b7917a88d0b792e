import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import type { Request as UndiciRequest } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { adoptRequest } from '../src/adoptRequest.js'
import { createFetch } from '../src/index.js'
import { recordEgress } from './helpers.js'

// Node's global `Request` is rebuilt as undici's (adoptRequest), and its
// cache mode was left behind: `new Request(url, { cache: 'no-store' })`
// went out without the `pragma: no-cache` / `cache-control: no-cache` that
// Node's own fetch (and createFetch given `init.cache`) sends for it, so a
// proxy or CDN in between could answer from its cache a call that asked
// for a fresh answer.

let server: Server | undefined
let other: Server | undefined
afterEach(async () => {
  for (const s of [server, other]) {
    if (!s) continue
    s.closeAllConnections()
    s.close()
    await once(s, 'close')
  }
  server = undefined
  other = undefined
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
// rule): its cache mode carried without its mode, rebuilding the Request
// threw. Nothing on the wire tells it from a plain one (fetch has no cache
// and sends it as one, no header for it): what it keeps is read on the
// rebuilt Request.
it("a global Request made with cache: 'only-if-cached' (mode: 'same-origin') is rebuilt with both and sent", async () => {
  const { url, seen } = await recording()
  const request = new globalThis.Request(
    url,
    withCache({ cache: 'only-if-cached', mode: 'same-origin' }),
  )
  const rebuilt = adoptRequest(request) as UndiciRequest
  expect([rebuilt.cache, rebuilt.mode]).toEqual(['only-if-cached', 'same-origin'])
  const fetch = createFetch()
  try {
    const res = await fetch(request, { deadline: Deadline.after(5000) })
    expect(await res.text()).toBe('ok')
  } finally {
    await fetch.close()
  }
  expect(seen).toHaveLength(1)
})

// Its mode is left behind otherwise, as it was before its cache mode was
// carried: with it, a cross-origin redirect (another port: http to https,
// apex to www) answered a `no-cors` Request with an opaque status 0 — the
// target's 503 hidden, its retry-skipped gone — and a `same-origin` one
// with a bare Error, retry-skipped `after-first-byte`.
it.each(['no-cors', 'same-origin'] as const)(
  "a global Request made with mode: '%s' follows a redirect to another origin, its answer as it came",
  async (mode) => {
    other = createServer((_req, res) => {
      res.writeHead(503).end('busy')
    })
    other.listen(0, '127.0.0.1')
    await once(other, 'listening')
    const target = `http://127.0.0.1:${(other.address() as AddressInfo).port}/there`
    server = createServer((_req, res) => {
      res.writeHead(302, { location: target }).end('moved')
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/start`
    const events = recordEgress()
    const fetch = createFetch()
    try {
      const res = await fetch(new globalThis.Request(url, withCache({ cache: 'default', mode })), {
        deadline: Deadline.after(5000),
      })
      expect([res.status, res.type, await res.text()]).toEqual([503, 'cors', 'busy'])
    } finally {
      events.stop()
      await fetch.close()
    }
    expect(events.skipped.map((s) => s.reason)).toEqual(['HTTP_503'])
  },
)
