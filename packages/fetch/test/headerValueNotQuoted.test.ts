import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { inspect } from 'node:util'
import { createFetch } from '@hourglass/fetch'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * A header value with a line break or NUL inside is refused before anything
 * is sent, as undici's fetch refuses it; but undici's TypeError quotes the
 * whole value ("Headers.append: \"Bearer sk-…\nsecond-line\" is an invalid
 * header value."), and a credential read from a file of two lines went into
 * the error's message and stack, so into every log line of it. The error
 * names the header instead, never its value, as a URL's password is never
 * shown.
 */
describe('a header value fetch refuses is not quoted back', () => {
  const TOKEN = 'sk-test-0123456789abcdefSECRET'
  const fetch = createFetch()
  const server = createServer((_req, res) => res.end('ok'))
  let url = ''
  let received = 0
  beforeAll(async () => {
    server.on('request', () => received++)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(async () => {
    await fetch.close()
    server.close()
  })

  it.each([
    ['a record', { authorization: `Bearer ${TOKEN}\nsecond-line` }, 'authorization'],
    ['pairs', [['x-api-key', `${TOKEN}\r\nx`]], 'x-api-key'],
    ['a NUL', { 'api-key': `${TOKEN}\0` + 'x' }, 'api-key'],
  ])(
    '%s: a TypeError naming the header, not its value; nothing sent',
    async (_label, headers, name) => {
      const error = await fetch(url, { headers: headers as never }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toContain(`headers["${name}"]`)
      expect(inspect(error, { showHidden: true, depth: 9 })).not.toContain(TOKEN)
      expect(received).toBe(0)
    },
  )

  it('a value whose line break is at an end is trimmed and sent, as fetch sends it', async () => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}\n` } })
    expect(res.status).toBe(200)
    await res.text()
  })
})
