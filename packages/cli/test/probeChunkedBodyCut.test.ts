import { expect, it } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'

// An endpoint that closes the connection in the middle of a chunked body (a
// server that crashed while streaming, a proxy that gave up) was told apart
// by a header it happened to send: without `Connection: close` the probe
// said it "closed the connection before the answer was complete", with it
// that it "did not answer in HTTP/1.1" — undici's parser, asked to finish
// the message at the close, reports an invalid EOF state. It did answer in
// HTTP/1.1 (status and headers read); it cut its body short, as curl says
// ("(18) transfer closed with outstanding read data remaining").

const cutBodies = {
  'between chunks':
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n',
  'inside a chunk':
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n10\r\nhello',
}

for (const [where, reply] of Object.entries(cutBodies)) {
  it(`a chunked body cut ${where} under Connection: close is a closed connection, not a non-HTTP answer`, async () => {
    const url = await answerRaw(reply)
    const run = await probeOnce(url)
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr.trim().split('\n').at(-1)).toBe(
      `hourglass probe: ${new URL(url).host} closed the connection before the answer was complete (the body ended before its last chunk)`,
    )
  })
}

it('the same cut on a keep-alive connection reads as before', async () => {
  const url = await answerRaw('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n')
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stderr.trim().split('\n').at(-1)).toBe(
    `hourglass probe: ${new URL(url).host} closed the connection before the answer was complete (other side closed)`,
  )
})
