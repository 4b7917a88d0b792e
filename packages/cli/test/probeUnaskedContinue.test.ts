import { expect, it } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'

// A server that sends an interim `100 Continue` before its 200, to a request
// that sent no `Expect: 100-continue`, ended the probe with "closed the
// connection before the answer was complete (bad response)": nothing had
// closed. undici (fetch's client) destroys the socket itself on any 100
// (client-h1's onHeadersComplete: `statusCode === 100` → SocketError 'bad
// response'), so the call cannot succeed; the line now says what was sent
// and who dropped the connection.

it('an unasked 100 Continue is named as such, not as a closed connection', async () => {
  const url = await answerRaw(
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
  )
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stdout).toBe('')
  expect(run.stderr.trim().split('\n').at(-1)).toBe(
    `hourglass probe: ${new URL(url).host} sent 100 Continue unasked (no Expect: 100-continue was sent), and undici, the HTTP client of fetch, drops the connection on it: any fetch caller fails the same way (UND_ERR_SOCKET: bad response)`,
  )
})

it('another interim answer (103 Early Hints) is read past, and the 200 measured', async () => {
  const url = await answerRaw(
    'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
  )
  const run = await probeOnce(url)
  expect(run.code, run.stderr).toBe(0)
})
