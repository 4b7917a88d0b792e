import { expect, it } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'

// A body that does not decode as `Content-Encoding: br` says ended the probe
// with "hourglass probe: Decompression failed": no host, no phase. gzip and
// deflate read "… sent a body that does not decode as its Content-Encoding
// says (Z_DATA_ERROR: …)"; brotli's zlib errors carry ERR__ERROR_* codes
// (BROTLI_DECODER_ERROR_* less its prefix), not Z_*. fetch asks for br over
// https:, and decodes it over http: too.

it('a body its Content-Encoding: br does not decode is named as such (exit 1, one line)', async () => {
  const url = await answerRaw(
    'HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 12\r\nConnection: close\r\n\r\nnot brotli!!',
  )
  const { port } = new URL(url)
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stderr.trim().split('\n').at(-1)).toMatch(
    new RegExp(
      `^hourglass probe: 127\\.0\\.0\\.1:${port} sent a body that does not decode as its Content-Encoding says \\(ERR__ERROR_[A-Z0-9_]+: Decompression failed\\)$`,
    ),
  )
  expect(run.stdout).toBe('')
})
