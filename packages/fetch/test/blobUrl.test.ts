import { afterAll, describe, expect, it } from 'vitest'
import { createFetch, isUrlRefused, UrlRefusedError } from '../src/index.js'
import { recordEgress } from './helpers.js'

/**
 * undici's fetch fetches a `blob:` URL made by `URL.createObjectURL` in this
 * process (with GET), and refuses one with no Blob behind it, or another
 * method, with a bare "invalid method" — which createFetch passed on as it
 * was, for a revoked URL fetched with GET too.
 */
describe('createFetch with a blob: URL', () => {
  const fetch = createFetch()
  afterAll(() => fetch.close())

  it('a live blob: URL is fetched as undici.fetch fetches it: its bytes and type', async () => {
    const url = URL.createObjectURL(new Blob(['hello'], { type: 'text/plain' }))
    try {
      const res = await fetch(url)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/plain')
      expect(await res.text()).toBe('hello')
    } finally {
      URL.revokeObjectURL(url)
    }
  })

  it('a revoked blob: URL is a UrlRefusedError (blob-not-found), not "invalid method", never retried', async () => {
    const url = URL.createObjectURL(new Blob(['hello']))
    URL.revokeObjectURL(url)
    const events = recordEgress()
    try {
      const error = await fetch(url, { retry: { fastConnectFailure: true } }).catch(
        (e: unknown) => e,
      )
      expect(isUrlRefused(error)).toBe(true)
      expect(error).toBeInstanceOf(UrlRefusedError)
      const refused = error as UrlRefusedError
      expect(refused.reason).toBe('blob-not-found')
      expect(refused.url).toBe(url)
      expect(refused.redirect).toBe(false)
      expect(refused.message).toContain('no Blob is registered under that URL')
      expect((refused.cause as Error).message).toBe('invalid method')
      expect(events.attempts).toEqual([])
      // The event names the URL as it is (its origin is "null": it read "nullnodedata:…").
      expect(events.skipped.map((m) => [m.url, m.reason, m.why])).toEqual([
        [url, 'URL_REFUSED', 'not-retryable'],
      ])
    } finally {
      events.stop()
    }
  })

  it('a revoked blob: URL asked for with POST is blob-not-found, not "GET only" (a GET is refused too)', async () => {
    const url = URL.createObjectURL(new Blob(['hello']))
    URL.revokeObjectURL(url)
    const error = await fetch(url, { method: 'POST', body: 'x' }).catch((e: unknown) => e)
    expect(isUrlRefused(error)).toBe(true)
    expect((error as UrlRefusedError).reason).toBe('blob-not-found')
  })

  it('a live blob: URL asked for with POST is a UrlRefusedError (blob-method)', async () => {
    const url = URL.createObjectURL(new Blob(['hello']))
    try {
      const error = await fetch(url, { method: 'POST', body: 'x' }).catch((e: unknown) => e)
      expect(isUrlRefused(error)).toBe(true)
      expect((error as UrlRefusedError).reason).toBe('blob-method')
      expect((error as Error).message).toContain('GET only')
    } finally {
      URL.revokeObjectURL(url)
    }
  })
})
