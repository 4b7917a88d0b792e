import { maxHeaderSize } from 'node:http'
import { expect, it } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'

// A call that fails ends the probe with one line naming the endpoint and
// the phase (README). Three answers an HTTP client refuses ended it with
// undici's bare words instead, naming neither: `hourglass probe: Headers
// Overflow Error` for response headers over Node's limit (which an
// operator can raise, and was not told how), `hourglass probe: terminated`
// for a broken chunked body (fetch's wrapper, its cause the parser's
// reason), and `hourglass probe: Response body length does not match
// content-length header`.

it('response headers over the HTTP client limit: named, with the limit and how to raise it', async () => {
  const url = await answerRaw(
    `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(maxHeaderSize + 1)}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok`,
  )
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stdout).toBe('')
  expect(run.stderr.trim().split('\n').at(-1)).toBe(
    `hourglass probe: ${new URL(url).host} sent response headers larger than the ${maxHeaderSize} bytes Node's HTTP client accepts (UND_ERR_HEADERS_OVERFLOW); to measure it, raise the limit: NODE_OPTIONS=--max-http-header-size=<bytes>`,
  )
})

it('a chunked body the parser refuses: named as the HTTP/1.1 failure it is, not "terminated"', async () => {
  const url = await answerRaw(
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
  )
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stderr.trim().split('\n').at(-1)).toBe(
    `hourglass probe: ${new URL(url).host} did not answer in HTTP/1.1 (Response does not match the HTTP/1.1 protocol (Invalid character in chunk size))`,
  )
})

it('a body cut short of its Content-Length: the closed connection says why, not "terminated"', async () => {
  const url = await answerRaw('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc')
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stderr.trim().split('\n').at(-1)).toBe(
    `hourglass probe: ${new URL(url).host} closed the connection before the answer was complete (other side closed)`,
  )
})

it('a body whose length is not its Content-Length: named with the endpoint', async () => {
  const url = await answerRaw(
    'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\nConnection: close\r\n\r\nabcd',
  )
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stderr.trim().split('\n').at(-1)).toBe(
    `hourglass probe: ${new URL(url).host} sent a body whose length does not match its Content-Length header (UND_ERR_RES_CONTENT_LENGTH_MISMATCH)`,
  )
})
