import { once } from 'node:events'
import { type AddressInfo, createServer } from 'node:net'
import { inspect } from 'node:util'
import { Deadline } from '@hourglass/core'
import { Agent } from 'undici'
import { expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { logged } from './support/logged.js'
import { useCleanup } from './support/useCleanup.js'

// A response undici's HTTP/1.1 parser refuses — a control byte or a bare CR
// in a header value, a redirect's `Location` among them — fails with
// undici's `HTTPParserError`, whose enumerable `data` holds the bytes read
// from where the parser stopped: the rest of that header (a Location's
// signed query), every header after it (`Set-Cookie`) and the body. Passed
// on as it was, `{ err }` in a log line printed them all.

const SECRET = 'MARK-sig-c41e07'
const SESSION = 'MARK-session-8f2a'

const cleanup = useCleanup()

/** A server on 127.0.0.1 that answers every request with a 302 whose Location header is `location`, as raw bytes. */
function rawRedirect(location: string): Promise<string> {
  return rawServer(
    `HTTP/1.1 302 Found\r\nLocation: ${location}\r\nSet-Cookie: session=${SESSION}\r\nContent-Length: 5\r\n\r\nmoved`,
  )
}

/** A server on 127.0.0.1 that answers every request with `response`, as raw bytes; its origin. */
async function rawServer(response: string): Promise<string> {
  const server = createServer((socket) => {
    socket.on('error', () => {})
    socket.once('data', () => socket.end(response, 'latin1'))
  })
  cleanup.keep({
    async close() {
      server.close()
      await once(server, 'close')
    },
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const CONTROL_BYTE = `https://idp.example/cb\x01?sig=${SECRET}`

const LOCATIONS: [string, string, string][] = [
  ['a control byte', CONTROL_BYTE, 'Invalid header value char'],
  ['a bare CR', `https://idp.example/cb\r?sig=${SECRET}`, 'Missing expected LF after header value'],
]

it.each(LOCATIONS)(
  'createFetch: a redirect whose Location holds %s rejects with HTTPParserError saying why, its bytes in no log line or event',
  async (_, location, why) => {
    const base = await rawRedirect(location)
    const events = cleanup.record()
    const fetch = cleanup.keep(createFetch({ retry: false }))
    const error = await fetch(`${base}/start`, { deadline: Deadline.after(2000) }).catch(
      (e: unknown) => e,
    )
    events.stop()
    expect(error).toMatchObject({ name: 'HTTPParserError' })
    expect((error as Error).message).toContain(why)
    const text = `${logged(error)}${inspect(events.ends, { depth: 5 })}`
    for (const secret of [SECRET, SESSION]) expect(text).not.toContain(secret)
    // Still there for code that reads it.
    expect((error as { data?: string }).data).toContain(SESSION)
    expect(events.ends).toHaveLength(1)
  },
)

it('the interceptor: a response whose Location holds a control byte rejects request() with HTTPParserError, its bytes in no log line', async () => {
  const base = await rawRedirect(CONTROL_BYTE)
  const agent = cleanup.keep(new Agent({ connect: createConnector() }))
  const dispatcher = agent.compose(deadlineInterceptor())
  const error = await dispatcher
    .request({ origin: base, path: '/start', method: 'GET' })
    .catch((e: unknown) => e)
  expect(error).toMatchObject({ name: 'HTTPParserError' })
  expect((error as Error).message).toContain('Invalid header value char')
  for (const secret of [SECRET, SESSION]) expect(logged(error)).not.toContain(secret)
})

it('createFetch: a chunked body the parser refuses fails the read with the HTTPParserError as cause, the body’s bytes in no log line', async () => {
  const base = await rawServer(
    `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\ntoken=${SECRET}\r\n`,
  )
  const fetch = cleanup.keep(createFetch({ retry: false }))
  const res = await fetch(`${base}/start`, { deadline: Deadline.after(2000) })
  const error = await res.text().catch((e: unknown) => e)
  expect((error as Error).cause).toMatchObject({ name: 'HTTPParserError' })
  expect(((error as Error).cause as Error).message).toContain('Invalid character in chunk size')
  expect(logged(error)).not.toContain(SECRET)
})
