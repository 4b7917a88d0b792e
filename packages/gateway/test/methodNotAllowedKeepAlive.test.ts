import type { Socket } from 'node:net'
import { afterAll, afterEach, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'
import { rawExchange, rawHeaderOf } from './support/rawExchange.js'

/**
 * `Content-Length: 0` owes no body (Python's `requests.post(url)`, `curl -X
 * PUT -d ''`): a 405, 404 or 400 for such a request closed its keep-alive
 * connection as for a body nobody would read, and a request pipelined
 * behind it went unserved (499 `behind_last_answer`).
 */
let harness: Harness | undefined
let close: (() => Promise<void>) | undefined
const sockets: Socket[] = []
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy()
})
afterAll(async () => {
  await harness?.close()
  await close?.()
})

it.each([
  ['PUT /v1/chat/completions', 'HTTP/1.1 405'],
  ['POST /v1/models', 'HTTP/1.1 405'],
  ['POST /nowhere', 'HTTP/1.1 404'],
  // Not JSON (no content type): its 400 came before a body that was never owed.
  ['POST /v1/chat/completions', 'HTTP/1.1 400'],
])(
  '%s with Content-Length: 0 keeps the connection, and one pipelined behind it is answered',
  async (target, status) => {
    if (harness === undefined) {
      const p = await fakeProvider('openai', ['k'])
      close = () => p.fake.close()
      harness = await startHarness({
        providers: { p: p.entry },
        models: { m: fallback(['p', 'gpt']) },
      })
    }
    const answer = await rawExchange(
      harness.url,
      `${target} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n` +
        'GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n',
      sockets,
    )
    expect(answer.match(/HTTP\/1\.1 \d{3}/g)).toEqual([status, 'HTTP/1.1 200'])
    expect(rawHeaderOf(answer, 'connection')).toMatch(/keep-alive/i)
  },
)
