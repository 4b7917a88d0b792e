import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { Agent } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  deadlineInterceptor,
  type UnexpectedRedirectError,
} from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// Event URLs (and the URLs errors name) leave out the query, as it may
// carry a credential; a path segment's parameters may too: a servlet
// container that cannot set a cookie puts the session in the path
// (`/cart;jsessionid=…`), in the links and redirects it sends, and others
// do the same with `;sid=`. Those went into every event (traces, metrics:
// a series per session) and into redirect error messages. They are cut
// from each segment (`/cart;jsessionid=…/items;v=2` → `/cart/items`), as
// the whole query is, only where a URL is shown; the request goes out as given.

const SECRET = 'MARK-session-7c41'

let server: Server | undefined
let events: EgressEvents | undefined
const closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.splice(0).map((c) => c.close()))
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** Answers `/start…` with a 302 to a path that carries the session; anything else 200. Records paths. */
async function serve(): Promise<{ origin: string; paths: string[] }> {
  const paths: string[] = []
  server = createServer((req, res) => {
    paths.push(req.url ?? '')
    if (req.url?.endsWith('/relative')) res.writeHead(302, { location: 'next' }).end()
    else if (req.url?.startsWith('/start')) {
      res.writeHead(302, { location: `/next;jsessionid=${SECRET}?a=1` }).end()
    } else res.end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return { origin: `http://127.0.0.1:${port}`, paths }
}

describe('a path parameter (;jsessionid=, ;sid=) is cut from event URLs', () => {
  it('createFetch: the attempt, its end and a redirect hop; the request itself is sent as given', async () => {
    const { origin, paths } = await serve()
    const fetch = createFetch()
    closers.push(fetch)
    events = recordEgress()
    const path = `/cart;jsessionid=${SECRET}/items;sid=${SECRET};v=2?q=1`
    await (await fetch(`${origin}${path}`)).text()
    await (await fetch(`${origin}/start;sid=${SECRET}`)).text()
    expect(paths).toEqual([path, `/start;sid=${SECRET}`, `/next;jsessionid=${SECRET}?a=1`])
    expect(events.attempts.map((a) => a.url)).toEqual([
      `${origin}/cart/items`,
      `${origin}/start`,
      `${origin}/next`,
    ])
    expect(events.ends.map((e) => e.url)).toEqual(events.attempts.map((a) => a.url))
  })

  it('deadlineInterceptor: the same', async () => {
    const { origin, paths } = await serve()
    const base = new Agent({ connect: createConnector() })
    closers.push(base)
    const dispatcher = base.compose(deadlineInterceptor())
    events = recordEgress()
    const path = `/cart;jsessionid=${SECRET}/items?q=1`
    const res = await dispatcher.request({ origin, path, method: 'GET' })
    await res.body.text()
    expect(paths).toEqual([path])
    expect(events.attempts.map((a) => a.url)).toEqual([`${origin}/cart/items`])
    expect(events.ends.map((e) => e.url)).toEqual([`${origin}/cart/items`])
  })

  it('a redirect error names neither URL with it; its `location` field keeps it', async () => {
    const { origin } = await serve()
    const fetch = createFetch()
    closers.push(fetch)
    let error: UnexpectedRedirectError | undefined
    try {
      await fetch(`${origin}/start;jsessionid=${SECRET}`, {
        redirect: 'error',
        deadline: Deadline.after(2000),
      })
    } catch (thrown) {
      error = thrown as UnexpectedRedirectError
    }
    expect(error?.code).toBe('UNEXPECTED_REDIRECT')
    expect(error?.message).not.toContain(SECRET)
    expect(error?.message).toContain(`${origin}/start answered 302`)
    expect(error?.message).toContain(`${origin}/next`)
    expect(error?.location).toBe(`${origin}/next;jsessionid=${SECRET}?a=1`)
  })

  it('a relative Location is still resolved against the URL called, its parameters included', async () => {
    const { origin } = await serve()
    const fetch = createFetch()
    closers.push(fetch)
    let error: UnexpectedRedirectError | undefined
    try {
      await fetch(`${origin}/a;jsessionid=${SECRET}/relative`, { redirect: 'error' })
    } catch (thrown) {
      error = thrown as UnexpectedRedirectError
    }
    expect(error?.code).toBe('UNEXPECTED_REDIRECT')
    expect(error?.location).toBe(`${origin}/a;jsessionid=${SECRET}/next`)
    expect(error?.message).not.toContain(SECRET)
  })
})
