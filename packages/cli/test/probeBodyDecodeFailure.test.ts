import { expect, it } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'

// An endpoint whose body does not decode as its Content-Encoding says (a
// proxy that labels plain text gzip) ended the probe with the single word
// "hourglass probe: terminated": undici's fetch error, whose cause (zlib's
// Z_DATA_ERROR) was the only thing that said what went wrong. A failed call
// is one line naming the phase (README): here, the body.

it('a body that its Content-Encoding does not decode is named as such (exit 1, one line)', async () => {
  const url = await answerRaw(
    'HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello',
  )
  const { port } = new URL(url)
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  const lines = run.stderr.trim().split('\n')
  expect(lines.at(-1)).toBe(
    `hourglass probe: 127.0.0.1:${port} sent a body that does not decode as its Content-Encoding says (Z_DATA_ERROR: incorrect header check)`,
  )
  expect(run.stdout).toBe('')
})
