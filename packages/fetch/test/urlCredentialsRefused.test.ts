import { inspect } from 'node:util'
import { afterEach, expect, it } from 'vitest'
import { createFetch, isUrlRefused, UrlRefusedError } from '../src/index.js'
import { rejection } from './helpers.js'

// fetch never sends a URL's `user:pass@` (the fetch spec refuses the
// Request). undici's TypeError said so naming the whole URL — the password
// and the query's key with it — in a message every logger prints.

const fetch = createFetch()
afterEach(async () => {
  await fetch.close()
})

it.each([
  ['a string', 'http://user:PASSWORD-MARK@127.0.0.1:9/x?key=KEY-MARK'],
  ['a URL', new URL('http://user:PASSWORD-MARK@127.0.0.1:9/x?key=KEY-MARK')],
])(
  'a URL with credentials, given as %s, is refused naming neither its password nor its query',
  async (_kind, url) => {
    const error = await rejection(fetch(url))
    expect(error).toBeInstanceOf(UrlRefusedError)
    expect(isUrlRefused(error)).toBe(true)
    expect(error).toMatchObject({
      code: 'URL_REFUSED',
      reason: 'credentials',
      url: 'http://127.0.0.1:9/x',
      redirect: false,
    })
    for (const shown of [String(error), JSON.stringify(error), inspect(error, { depth: 5 })]) {
      expect(shown).not.toContain('PASSWORD-MARK')
      expect(shown).not.toContain('KEY-MARK')
    }
  },
)
