import type { Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { Attempt } from '../src/Attempt.js'

// The headers limit's look at an upload's socket (Attempt.watchSocket), on a
// manual clock with sockets reduced to the fields it reads: Node's stream
// buffer (`writableLength`) and libuv's queue (`_handle.writeQueueSize`; a
// TLS socket's TCP handle is `_handle._parent`). The real thing, with real
// sockets, is slowUploadAnswered.test.ts.

const LIMIT_MS = 1000

interface FakeSocket {
  writableLength: number
  destroyed: boolean
  _handle: { writeQueueSize: number; _parent?: { writeQueueSize: number } }
}

function uploading(socket: FakeSocket): { attempt: Attempt; clock: ManualClock } {
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
    url: 'http://x/',
    number: 1,
  })
  attempt.enter('headers')
  attempt.watchSocket(socket as unknown as Socket)
  attempt.uploadWritten()
  return { attempt, clock }
}

const code = (attempt: Attempt) => (attempt.reason as { code?: string } | undefined)?.code

it('waits again while libuv’s queue shrinks, and fails once it stops moving', () => {
  // One write of 8 MB: the stream buffer holds all of it until the kernel has the last byte.
  const socket: FakeSocket = {
    writableLength: 8e6,
    destroyed: false,
    _handle: { writeQueueSize: 3e6 },
  }
  const { attempt, clock } = uploading(socket)

  socket._handle.writeQueueSize = 2e6
  clock.advance(LIMIT_MS)
  expect(attempt.done).toBe(false)
  socket._handle.writeQueueSize = 5e5
  clock.advance(LIMIT_MS)
  expect(attempt.done).toBe(false)

  clock.advance(LIMIT_MS) // the peer stopped reading: nothing moved since the last look
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
  expect(clock.pendingTimers).toBe(0)
})

it('over TLS, reads the TCP handle’s queue beneath the TLS one', () => {
  const socket: FakeSocket = {
    writableLength: 8e6,
    destroyed: false,
    _handle: { writeQueueSize: 8.1e6, _parent: { writeQueueSize: 4e6 } },
  }
  const { attempt, clock } = uploading(socket)
  const parent = socket._handle._parent as { writeQueueSize: number }

  parent.writeQueueSize = 3e6
  clock.advance(LIMIT_MS)
  expect(attempt.done).toBe(false)
  clock.advance(LIMIT_MS)
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
})

it('the last byte leaving Node is a move; after it the limit counts the server’s silence', () => {
  const socket: FakeSocket = {
    writableLength: 8e6,
    destroyed: false,
    _handle: { writeQueueSize: 1e6 },
  }
  const { attempt, clock } = uploading(socket)

  socket.writableLength = 0
  socket._handle.writeQueueSize = 0
  clock.advance(LIMIT_MS)
  expect(attempt.done).toBe(false)
  clock.advance(LIMIT_MS)
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
})

it('a socket that never held the upload (all of it taken by the kernel at once) fails at the limit', () => {
  const socket: FakeSocket = { writableLength: 0, destroyed: false, _handle: { writeQueueSize: 0 } }
  const { attempt, clock } = uploading(socket)
  clock.advance(LIMIT_MS)
  expect(code(attempt)).toBe('HEADERS_TIMEOUT')
})

it('once the response headers arrive, the socket moving does not hold off the body limit', () => {
  const socket: FakeSocket = {
    writableLength: 8e6,
    destroyed: false,
    _handle: { writeQueueSize: 3e6 },
  }
  const { attempt, clock } = uploading(socket)
  attempt.enter('body')
  socket._handle.writeQueueSize = 0
  clock.advance(LIMIT_MS)
  expect(code(attempt)).toBe('BODY_TIMEOUT')
})
