import { inspect } from 'node:util'
import { expect, it } from 'vitest'
import { isUrlRefused } from '../src/index.js'
import { redirectTo } from './support/redirectTo.js'
import { useCleanup } from './support/useCleanup.js'

// A redirect to a URL fetch refuses (a scheme it does not fetch, a blocked
// port, a Location that is no URL) is refused again by a retry: its
// retry-skipped said `after-first-byte` when the redirect came with a body
// (its bytes counted) and `not-retryable` without one, as `redirect: 'error'`
// did before it was told apart the same way.

const cleanup = useCleanup()

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
    const { error, events } = await redirectTo(cleanup, location, { body })
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
    const { error, events, port } = await redirectTo(
      cleanup,
      (_base, port) => `http://user:MARK-pw-91c4@${host}:${port}/x?sig=MARK-sig`,
      { body },
    )
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
