import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createFetch, isUrlRefused, UrlRefusedError } from '@hourglass/fetch'
import { afterAll, describe, expect, it } from 'vitest'
import { recordEgress } from './helpers.js'

describe('createFetch with a URL that does not parse', () => {
  const fetch = createFetch()
  afterAll(() => fetch.close())

  it("rejects with undici's own TypeError, which names the URL, not its bare cause", async () => {
    const error = await fetch('http://127.0.0.1:80a/').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toBe('Failed to parse URL from http://127.0.0.1:80a/')
  })

  it('says the same while the retry events are subscribed (their URL no longer throws "Invalid URL")', async () => {
    const events = recordEgress()
    try {
      const error = await fetch('http://127.0.0.1:80a/?token=x').catch((e: unknown) => e)
      expect((error as Error).message).toBe(
        'Failed to parse URL from http://127.0.0.1:80a/ (shown without its query, fragment, path parameters or credentials)',
      )
      // Nor its credentials, which a URL that parses never shows in an event.
      await fetch('http://user:pw@127.0.0.1:80a/').catch(() => {})
      expect(events.skipped.map((m) => m.url)).toEqual([
        'http://127.0.0.1:80a/',
        'http://127.0.0.1:80a/',
      ])
    } finally {
      events.stop()
    }
  })
})

/**
 * A port the fetch spec blocks and a scheme fetch does not fetch are refused
 * by undici with a bare `Error` ("bad port", "unknown scheme") and no code:
 * the retry events said `reason: 'Error'`, and no guard told them apart.
 */
describe('createFetch with a URL fetch refuses to send to', () => {
  const fetch = createFetch()
  afterAll(() => fetch.close())

  it.each([
    ['http://127.0.0.1:6000/x?key=secret', 'bad-port', 'http://127.0.0.1:6000/x'],
    ['ftp://127.0.0.1/x', 'unsupported-scheme', 'ftp://127.0.0.1/x'],
    ['file:///etc/passwd', 'unsupported-scheme', 'file:///etc/passwd'],
  ])('%s is a UrlRefusedError (%s), never sent nor retried', async (url, reason, shown) => {
    const events = recordEgress()
    try {
      const error = await fetch(url).catch((e: unknown) => e)
      expect(isUrlRefused(error)).toBe(true)
      expect(error).toBeInstanceOf(UrlRefusedError)
      const refused = error as UrlRefusedError
      expect(refused.code).toBe('URL_REFUSED')
      expect(refused.reason).toBe(reason)
      expect(refused.url).toBe(shown)
      expect(refused.redirect).toBe(false)
      expect(refused.message).not.toContain('secret')
      expect(events.attempts).toEqual([])
      expect(events.skipped.map((m) => [m.reason, m.why])).toEqual([
        ['URL_REFUSED', 'not-retryable'],
      ])
    } finally {
      events.stop()
    }
  })

  it.each([
    ['http://127.0.0.1:6000/next?sig=x', 'bad-port', 'http://127.0.0.1:6000/next'],
    ['ftp://127.0.0.1/next', 'unsupported-scheme', 'ftp://127.0.0.1/next'],
    // A data: URL is fetched when asked for, never redirected to: the message must not say otherwise, nor carry its payload.
    ['data:text/plain,hello', 'unsupported-scheme', 'data:'],
  ])(
    'a redirect to %s is refused as a redirect (%s): the first request was sent',
    async (location, reason, shown) => {
      const server = createServer((_req, res) => {
        res.writeHead(302, { location }).end()
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      try {
        const { port } = server.address() as AddressInfo
        const error = await fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e)
        expect(isUrlRefused(error)).toBe(true)
        const refused = error as UrlRefusedError
        expect([refused.reason, refused.url, refused.redirect]).toEqual([reason, shown, true])
        expect(refused.message).not.toContain('sig=')
        expect(refused.message).not.toContain('only http:, https: and data:')
      } finally {
        server.closeAllConnections()
        server.close()
      }
    },
  )
})
