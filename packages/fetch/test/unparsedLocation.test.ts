import { expect, it } from 'vitest'
import { unparsedWithoutQuery } from '../src/errors/withoutQuery.js'
import {
  isUnexpectedRedirect,
  isUrlRefused,
  ProbeRedirectError,
  probe,
  UrlRefusedError,
} from '../src/index.js'
import { logged } from './support/logged.js'
import { redirectTo } from './support/redirectTo.js'
import { useCleanup } from './support/useCleanup.js'

// A redirect whose `Location` does not parse as a URL — a server that
// built it from a setting left unset (`https://api.example.com:undefined/…`).
// Followed (the default), the caller got Node's bare `TypeError: Invalid
// URL` (`ERR_INVALID_URL`), read as if its own URL were wrong, with the
// whole Location — query, path parameters and all — in an enumerable
// `input` field every logger prints. Under `redirect: 'error'` and in
// `probe`, the error message named the Location as it came, query
// included: the message leaves a Location's query out only when it parsed.

const SECRET = 'MARK-sig-70c2e1'
const SESSION = 'MARK-session-3a9d'
const PASSWORD = 'MARK-pw-e48b06'
const LOCATION = `https://u:${PASSWORD}@api.example.com:undefined/cb;jsessionid=${SESSION}?sig=${SECRET}#frag`

const cleanup = useCleanup()

it('a followed redirect whose Location is no URL rejects with UrlRefusedError (invalid-location), the Location’s query and credentials in no log line, sent once', async () => {
  const { error, events, requests } = await redirectTo(cleanup, LOCATION)
  expect(isUrlRefused(error)).toBe(true)
  expect(error).toBeInstanceOf(UrlRefusedError)
  expect(error).toMatchObject({
    code: 'URL_REFUSED',
    reason: 'invalid-location',
    redirect: true,
    url: 'https://api.example.com:undefined/cb',
  })
  const shown = logged(error)
  for (const secret of [SECRET, SESSION, PASSWORD]) expect(shown).not.toContain(secret)
  expect(requests).toBe(1)
  expect(events.ends.map((e) => e.statusCode)).toEqual([302])
  expect(events.retries).toHaveLength(0)
  expect(events.skipped.map((s) => s.reason)).toEqual(['URL_REFUSED'])
})

it("redirect: 'error' names a Location that is no URL without its query, path parameters, fragment or credentials", async () => {
  const { error } = await redirectTo(cleanup, LOCATION, { init: { redirect: 'error' } })
  expect(isUnexpectedRedirect(error)).toBe(true)
  expect((error as Error).message).toContain('a redirect to https://api.example.com:undefined/cb,')
  const shown = logged(error)
  for (const secret of [SECRET, SESSION, PASSWORD, '#frag']) expect(shown).not.toContain(secret)
  // The field keeps what the server sent (not enumerable: in no log line).
  expect((error as { location?: string }).location).toBe(LOCATION)
})

it('probe names a Location that is no URL without its query, path parameters, fragment or credentials', async () => {
  const { error } = await redirectTo(cleanup, LOCATION, {
    call: (url) => probe(url, { warmup: 0, samples: 1 }),
  })
  expect(error).toBeInstanceOf(ProbeRedirectError)
  expect((error as Error).message).toContain('a redirect to https://api.example.com:undefined/cb:')
  const shown = logged(error)
  for (const secret of [SECRET, SESSION, PASSWORD, '#frag']) expect(shown).not.toContain(secret)
})

// A Location undici reads otherwise than a plain parse of it: latin1 bytes
// (a legacy server's `ü` as the byte 0xFC), which undici decodes again as
// UTF-8 — U+FFFD, no host — and two Location headers, which it joins with
// ", ". Either parses as our handler reads it, and Node's bare `TypeError:
// Invalid URL` went on, its enumerable `input` carrying the query, its
// retry-skipped `after-first-byte`.
it.each([
  [
    'latin1 bytes in its host',
    (_base: string): string | string[] => `http://m\xfcller.example/cb?sig=${SECRET}`,
    // Shown as our handler read it (latin1), not as undici decoded it again.
    (_base: string) => 'http://m\xfcller.example/cb',
  ],
  [
    'two Location headers',
    (base: string): string | string[] => [base, `/cb?sig=${SECRET}`],
    // The first header, as our handler read it.
    (base: string) => base,
  ],
])(
  'a followed redirect whose Location undici cannot parse (%s) rejects with UrlRefusedError (invalid-location), its query in no log line',
  async (_, location, shown) => {
    const { error, events, base } = await redirectTo(cleanup, location)
    expect(error).toMatchObject({
      code: 'URL_REFUSED',
      reason: 'invalid-location',
      redirect: true,
      url: shown(base),
    })
    expect(logged(error)).not.toContain(SECRET)
    expect(events.skipped.map((s) => [s.reason, s.why])).toEqual([['URL_REFUSED', 'not-retryable']])
  },
)

// The credentials of a Location that is no URL run to its LAST `@` before
// the host ends, and a backslash is a slash in an http(s) URL: cut at the
// first `@`, or only after `//`, the password, or part of it, was shown.
it.each([
  [
    `https://user:p@ss${PASSWORD}@api.example.com:undefined/cb`,
    'https://api.example.com:undefined/cb',
  ],
  [
    `https:\\\\user:${PASSWORD}@api.example.com:undefined\\cb`,
    'https:\\\\api.example.com:undefined\\cb',
  ],
  [`https:user:${PASSWORD}@api.example.com:undefined/cb`, 'https:api.example.com:undefined/cb'],
  [
    `https:///user:${PASSWORD}@api.example.com:undefined/cb`,
    'https:///api.example.com:undefined/cb',
  ],
  [`//user:${PASSWORD}@api.example.com:undefined/cb`, '//api.example.com:undefined/cb'],
])(
  'a Location that is no URL, %s, is shown without the credentials the URL parser reads in it',
  async (location, shown) => {
    // What the URL parser takes for user name and password, the port fixed
    // (against an http: URL, as the redirect's: under https: itself,
    // `https:user…` is a path).
    const parsed = new URL(location.replace(':undefined', ':8443'), 'http://base.example/')
    expect(parsed.password).toContain(PASSWORD)
    const { error } = await redirectTo(cleanup, location)
    expect(error).toMatchObject({ reason: 'invalid-location', url: shown })
    const text = logged(error)
    expect(text).not.toContain(PASSWORD)
    expect(text).not.toContain(parsed.username)
  },
)

// A Location with a space or tab at its end, which Node's http server sends
// as given (a setting read with its trailing blank): undici finds it no
// valid header value, never parses it, and fails setting `.hash` on the
// string — a bare `TypeError: Cannot create property 'hash' on string
// '<the whole Location>'`, no code, password and query in its message,
// retry-skipped `after-first-byte`.
it.each<[string, string | string[], string]>([
  [
    'a trailing space',
    `https://user:${PASSWORD}@idp.example/cb?sig=${SECRET} `,
    'https://idp.example/cb',
  ],
  [
    'a trailing tab',
    `https://idp.example/cb;jsessionid=${SESSION}?sig=${SECRET}\t`,
    'https://idp.example/cb',
  ],
  [
    'a trailing space and no query',
    `https://user:${PASSWORD}@idp.example/cb `,
    'https://idp.example/cb ',
  ],
  [
    'an empty second header (undici joins the two with ", ": a trailing space)',
    [`https://user:${PASSWORD}@idp.example/cb?sig=${SECRET}`, ''],
    'https://idp.example/cb',
  ],
])(
  'a followed redirect whose Location has %s rejects with UrlRefusedError (invalid-location), never retried, its secrets in no log line',
  async (_, location, shown) => {
    const { error, events, requests } = await redirectTo(cleanup, location)
    expect(error).toBeInstanceOf(UrlRefusedError)
    expect(error).toMatchObject({
      code: 'URL_REFUSED',
      reason: 'invalid-location',
      redirect: true,
      url: shown,
    })
    const text = `${logged(error)}${JSON.stringify(events.skipped)}`
    for (const secret of [SECRET, SESSION, PASSWORD]) expect(text).not.toContain(secret)
    expect(requests).toBe(1)
    expect(events.skipped.map((s) => [s.reason, s.why])).toEqual([['URL_REFUSED', 'not-retryable']])
  },
)

// A backslash ends a URL's authority only for the special schemes (http,
// https, ws, wss, ftp, file): in `foo://user:P\W…@host` the URL parser
// reads `P\W…` as the password, which was shown when cut at the backslash.
// Two Location headers, which undici joins with ", ": the first one is
// shown (cut part by part, the joined text showed a password holding ", ").
it.each<[string, string | string[], string]>([
  [
    'a non-special scheme with a backslash in its password',
    `foo://user:P\\W${PASSWORD}@api.example.com:undefined/cb`,
    'foo://api.example.com:undefined/cb',
  ],
  [
    'two Location headers, the second with credentials',
    ['http://a.example:undefined/x', `http://user:${PASSWORD}@b.example/y`],
    'http://a.example:undefined/x',
  ],
  [
    'two Location headers, the second with a password holding ", "',
    ['http://a.example:undefined/x', `http://user:${PASSWORD}, token:abc@b.example:undefined/y`],
    'http://a.example:undefined/x',
  ],
  [
    'two Location headers, the first with a password holding ", "',
    [`http://user:${PASSWORD}, token:abc@a.example:undefined/x`, '/y'],
    'http://a.example:undefined/x',
  ],
])(
  'a Location that is no URL (%s) is shown without the credentials the URL parser reads in it',
  async (_, location, shown) => {
    // What the URL parser takes for a password in the header that has one.
    const credentialed = [location].flat().find((l) => l.includes(PASSWORD)) as string
    const parsed = new URL(credentialed.replace(':undefined', ':8443'), 'http://base.example/')
    expect(parsed.password).toContain(PASSWORD)
    const { error } = await redirectTo(cleanup, location)
    expect(error).toMatchObject({ reason: 'invalid-location', url: shown })
    expect(logged(error)).not.toContain(PASSWORD)
  },
)

// The same cut, on text no HTTP/1.1 Location brings (undici's parser
// refuses a C0 control in a header value), as an event shows a caller's URL
// that does not parse: the URL parser strips C0 controls and spaces before
// the scheme, and reads credentials after them.
it.each([
  [
    `\x01https://user:${PASSWORD}@api.example.com:undefined/cb`,
    '\x01https://api.example.com:undefined/cb',
  ],
  [`foo://us\\er:${PASSWORD}@api.example.com:undefined/cb`, 'foo://api.example.com:undefined/cb'],
  [`foo://api.example.com:undefined/a\\b@c`, 'foo://api.example.com:undefined/a\\b@c'],
  [
    `https://user:${PASSWORD}, token:abc@api.example.com:undefined/x`,
    'https://api.example.com:undefined/x',
  ],
])('unparsedWithoutQuery(%j) is %j', (text, shown) => {
  expect(unparsedWithoutQuery(text)).toBe(shown)
})

// A Location that parses, with a scheme other than http(s): its `origin` is
// "null" (`foo:`, `file:`) or the page's (`blob:https://…`), and the message
// read `a redirect to null/x` — or the host twice — in place of the URL.
it.each<[string, string]>([
  [`foo://host.example/x;jsessionid=${SESSION}?sig=${SECRET}#frag`, 'foo://host.example/x'],
  [`foo://user:${PASSWORD}@host.example/x?sig=${SECRET}`, 'foo://host.example/x'],
  [`file:///srv/x?sig=${SECRET}`, 'file:///srv/x'],
  [`mailto:ops@example.com?subject=${SECRET}`, 'mailto:ops@example.com'],
  [`blob:https://user:${PASSWORD}@app.example/id?sig=${SECRET}`, 'blob:https://app.example/id'],
])("redirect: 'error' names a Location %s as %s", async (location, shown) => {
  const { error } = await redirectTo(cleanup, location, { init: { redirect: 'error' } })
  expect(isUnexpectedRedirect(error)).toBe(true)
  expect((error as Error).message).toContain(`a redirect to ${shown}, `)
  const text = logged(error)
  for (const secret of [SECRET, SESSION, PASSWORD, '#frag']) expect(text).not.toContain(secret)
})

// A followed redirect to a scheme fetch refuses names it as `redirect:
// 'error'` does: a `blob:` URL holds an http(s) URL of its own, whose
// credentials and path parameters `url` showed whole.
it.each([
  [
    `blob:https://user:${PASSWORD}@app.example/id;jsessionid=${SECRET}?sig=x`,
    'blob:https://app.example/id',
  ],
  [`foo://host.example/x;jsessionid=${SECRET}?q=1`, 'foo://host.example/x'],
])(
  'a followed redirect to %s is refused (unsupported-scheme), named %s: no password or session in any log line',
  async (location, shown) => {
    const { error } = await redirectTo(cleanup, location)
    expect(error).toMatchObject({ reason: 'unsupported-scheme', url: shown })
    expect(logged(error)).not.toContain(PASSWORD)
    expect(logged(error)).not.toContain(SECRET)
  },
)
