import type { Http2Stream } from 'node:http2'
import type { Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { Attempt } from '../src/Attempt.js'

// The headers limit's look at an HTTP/2 upload (Attempt.watchStream), on a
// manual clock with the stream and the session's socket reduced to the
// fields it reads: the stream's own buffer (`writableLength`, which holds a
// body written in one piece whole until its last byte is sent; that body's
// end is written with it, `writableEnded`, so a failed attempt leaves the
// stream to undici: Attempt.cutUpload) and what the session's socket has
// written (`bytesWritten`, every stream's frames). The
// real thing, over a real HTTP/2 server, is h2UploadAnswered.timing.test.ts.

const LIMIT_MS = 1000

interface FakeStream {
  writableLength: number
  writableEnded: boolean
  destroyed: boolean
}
interface FakeSocket {
  bytesWritten: number
  destroyed: boolean
}

function uploading(stream: FakeStream, socket: FakeSocket) {
  const clock = new ManualClock()
  const attempt = new Attempt({
    deadline: undefined,
    signal: undefined,
    limits: {
      dnsTimeoutMs: 0,
      connectTimeoutMs: 0,
      headersTimeoutMs: LIMIT_MS,
      bodyTimeoutMs: LIMIT_MS,
    },
    clock,
    method: 'PUT',
    url: 'https://x/',
    number: 1,
  })
  attempt.enter('headers')
  attempt.watchStream(stream as unknown as Http2Stream, socket as unknown as Socket)
  attempt.uploadWritten()
  return { attempt, clock }
}

const code = (attempt: Attempt) => (attempt.reason as { code?: string } | undefined)?.code

it('waits again while the session writes and the stream still holds the upload; fails once the session stops', () => {
  const stream = { writableLength: 6e6, writableEnded: true, destroyed: false }
  const socket = { bytesWritten: 1e5, destroyed: false }
  const { attempt, clock } = uploading(stream, socket)

  socket.bytesWritten += 5e5
  clock.advance(LIMIT_MS)
  expect(attempt.done).toBe(false)
  socket.bytesWritten += 5e5
  clock.advance(LIMIT_MS)
  expect(attempt.done).toBe(false)

  clock.advance(LIMIT_MS) // the server stopped reading: the session wrote nothing since the last look
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
  expect(clock.pendingTimers).toBe(0)
})

it('a PING or two on a stalled session is not the upload moving', () => {
  const stream = { writableLength: 6e6, writableEnded: true, destroyed: false }
  const socket = { bytesWritten: 1e5, destroyed: false }
  const { attempt, clock } = uploading(stream, socket)

  socket.bytesWritten += 2 * 46 // two PING frames in TLS records
  clock.advance(LIMIT_MS)
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
})

it('PINGs piling up over many looks count once they pass 16 KB, not at every look', () => {
  const stream = { writableLength: 6e6, writableEnded: true, destroyed: false }
  const socket = { bytesWritten: 16 * 1024 - 100, destroyed: false }
  const { attempt, clock } = uploading(stream, socket)

  socket.bytesWritten += 8 * 1024 // half the step, crossing a multiple of 16 KB: not a move
  clock.advance(LIMIT_MS)
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
})

it('the stream’s buffer emptying is a move; after it, other streams writing do not hold the limit off', () => {
  const stream = { writableLength: 6e6, writableEnded: true, destroyed: false }
  const socket = { bytesWritten: 1e5, destroyed: false }
  const { attempt, clock } = uploading(stream, socket)

  stream.writableLength = 0
  socket.bytesWritten += 5e5
  clock.advance(LIMIT_MS)
  expect(attempt.done).toBe(false)
  socket.bytesWritten += 5e5 // another stream's upload on the same session
  clock.advance(LIMIT_MS)
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
})

it('a stream already destroyed is not watched: the limit fires', () => {
  const stream = { writableLength: 6e6, writableEnded: true, destroyed: true }
  const socket = { bytesWritten: 1e5, destroyed: false }
  const { attempt, clock } = uploading(stream, socket)
  socket.bytesWritten += 5e5
  clock.advance(LIMIT_MS)
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
})
