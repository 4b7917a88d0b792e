import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { inspect } from 'node:util'
import { Deadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { createFetch, isUrlRefused } from '../src/index.js'
import { recordEgress } from './helpers.js'

// A redirect to a URL fetch refuses (a scheme it does not fetch, a blocked
// port, a Location that is no URL) is refused again by a retry: its
// retry-skipped said `after-first-byte` when the redirect came with a body
// (its bytes counted) and `not-retryable` without one, as `redirect: 'error'`
// did before it was told apart the same way.

let server: Server | undefined
afterEach(async () => {
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

it.each([
  ['a scheme fetch does not fetch', 'ftp://example.com/x', 'moved'],
  ['a scheme fetch does not fetch', 'ftp://example.com/x', ''],
  ['a blocked port', 'http://127.0.0.1:6000/x', 'moved'],
  ['a blocked port', 'http://127.0.0.1:6000/x', ''],
  ['a Location that is no URL', 'http://api.example.com:undefined/x', 'moved'],
  ['a Location that is no URL', 'http://api.example.com:undefined/x', ''],
])(
  'a redirect to %s (%s, body %j): retry-skipped says not-retryable',
  async (_, location, body) => {
    server = createServer((_req, res) => {
      res.writeHead(302, { location }).end(body)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const events = recordEgress()
    const fetch = createFetch()
    const error = await fetch(`${base}/start`, { deadline: Deadline.after(2000) }).catch(
      (e: unknown) => e,
    )
    events.stop()
    await fetch.close()
    expect(isUrlRefused(error)).toBe(true)
    expect(events.skipped.map((s) => [s.reason, s.why])).toEqual([['URL_REFUSED', 'not-retryable']])
  },
)

// A Location with a user name or password: undici refuses it with a bare
// `Error` ('cross origin not allowed for request mode "cors"', or 'URL
// cannot contain credentials…'), which went on with no code, retry-skipped
// `after-first-byte` when the redirect had a body.
it.each([
  ['the same origin', '127.0.0.1', 'moved'],
  ['the same origin', '127.0.0.1', ''],
  ['another origin', 'localhost', 'moved'],
  ['another origin', 'localhost', ''],
])(
  'a redirect to a Location with credentials on %s (%s, body %j) is UrlRefusedError (credentials), not-retryable, its password and query unshown',
  async (_, host, body) => {
    let port = 0
    server = createServer((_req, res) => {
      res.writeHead(302, { location: `http://user:MARK-pw-91c4@${host}:${port}/x?sig=MARK-sig` })
      res.end(body)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
    const events = recordEgress()
    const fetch = createFetch()
    const error = await fetch(`http://127.0.0.1:${port}/start`, {
      deadline: Deadline.after(2000),
    }).catch((e: unknown) => e)
    events.stop()
    await fetch.close()
    expect(error).toMatchObject({
      code: 'URL_REFUSED',
      reason: 'credentials',
      redirect: true,
      url: `http://${host}:${port}/x`,
    })
    expect(inspect(error, { depth: 5 })).not.toMatch(/MARK-pw|MARK-sig/)
    expect(events.skipped.map((s) => [s.reason, s.why])).toEqual([['URL_REFUSED', 'not-retryable']])
  },
)
