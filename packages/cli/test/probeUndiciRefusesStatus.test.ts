import { expect, it } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'

// Status lines undici's parser reads but its client then fails on ended the
// probe with words that named nothing: `HTTP/1.1 000` (or any status under
// 100, as some broken proxies send) printed "hourglass probe: The expression
// evaluated to a falsy value:" — the first line of an AssertionError from
// inside undici (`assert(statusCode >= 100)`), and a 101 Switching Protocols
// to a request that asked for no upgrade read "closed the connection before
// the answer was complete (bad upgrade)", when nothing had closed: undici
// drops the connection itself. Each now names what the endpoint sent.

function lastLine(stderr: string): string {
  return stderr.trim().split('\n').at(-1) ?? ''
}

it('a status under 100 is named as no HTTP status, not as a failed assertion', async () => {
  const url = await answerRaw(
    'HTTP/1.1 000 Zero\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
  )
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stdout).toBe('')
  expect(lastLine(run.stderr)).toBe(
    `hourglass probe: ${new URL(url).host} answered a status under 100, which is no HTTP status (100 to 599), and undici, the HTTP client of fetch, fails on it: any fetch caller fails the same way (ERR_ASSERTION: statusCode >= 100)`,
  )
})

it('an unasked 101 Switching Protocols is named as such, not as a closed connection', async () => {
  const url = await answerRaw(
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
  )
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stdout).toBe('')
  expect(lastLine(run.stderr)).toBe(
    `hourglass probe: ${new URL(url).host} answered 101 Switching Protocols unasked (the probe asks for no upgrade), and undici, the HTTP client of fetch, drops the connection on it: any fetch caller fails the same way (UND_ERR_SOCKET: bad upgrade)`,
  )
})

it('a 101 without an Upgrade header: the same line, not a failed assertion', async () => {
  const url = await answerRaw('HTTP/1.1 101 Switching Protocols\r\n\r\n')
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(lastLine(run.stderr)).toBe(
    `hourglass probe: ${new URL(url).host} answered 101 Switching Protocols unasked (the probe asks for no upgrade), and undici, the HTTP client of fetch, drops the connection on it: any fetch caller fails the same way (ERR_ASSERTION: upgrade)`,
  )
})
