import { inspect } from 'node:util'
import { createFetch } from '@hourglass/fetch'
import { afterAll, describe, expect, it } from 'vitest'

// A URL built from a setting left unset (`https://host:${PORT}/…?key=${KEY}`,
// PORT undefined) does not parse. undici's TypeError named it whole — the
// password and the `?key=` — in its message and its enumerable `input`,
// which every logger prints; a URL that parses is never shown so (a bad
// port's UrlRefusedError leaves the query out, a password is refused
// without repeating it).
describe('createFetch with a URL that does not parse, carrying secrets', () => {
  const fetch = createFetch()
  afterAll(() => fetch.close())

  it.each([
    [
      'https://proxy:pr0xyPassw0rd-51d0a8@gw.example:undefined/v1beta/m:generateContent?key=AIzaSyQ1w2e3r4t5y6u7SECRET',
      'https://gw.example:undefined/v1beta/m:generateContent',
    ],
    ['http://127.0.0.1:80a/?token=tok-9f8e7d6c5b4aSECRET', 'http://127.0.0.1:80a/'],
  ])('%s: a TypeError naming it without its query or credentials', async (url, shown) => {
    const error = await fetch(url).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as TypeError & { code?: string }).code).toBe('ERR_INVALID_URL')
    expect((error as Error).message).toContain(`Failed to parse URL from ${shown}`)
    const logged = `${JSON.stringify({ ...(error as object) })} ${inspect(error, { depth: 10 })}`
    expect(logged).not.toContain('SECRET')
    expect(logged).not.toContain('pr0xyPassw0rd')
  })
})
