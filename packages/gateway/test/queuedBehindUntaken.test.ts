import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import { type AddressInfo, connect } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import type { Response } from 'express'
import { afterEach, expect, it } from 'vitest'
import { flushedOrCut, QUEUED_STALL_MS } from '../src/http/flushedOrCut.js'

/**
 * An answer pipelined behind another waits for its turn past its own
 * deadline (test/pipelinedBehindStream.timing.test.ts) — but not for ever:
 * an answer ahead that was ended and is never taken (a client that stopped
 * reading; its last write not waited for) holds the turn for good, and the
 * answer behind it, its handler and its listeners were held with it until
 * the connection died. Once its connection has had bytes waiting and none
 * of them taken for `QUEUED_STALL_MS`, it is cut: the connection closed.
 */
const closers: Array<() => void> = []
afterEach(() => {
  for (const close of closers.splice(0)) close()
})

/**
 * A loopback server whose `/ahead` is answered by `ahead`, and whose
 * `/small` answers at once and waits in `flushedOrCut` under a 200 ms
 * deadline on a manual clock; one connection pipelining both, its reads
 * paused unless `reading`.
 */
async function queuedBehind(ahead: (res: ServerResponse) => void, { reading = false } = {}) {
  const clock = new ManualClock()
  const state = { cuts: 0, waited: undefined as Promise<void> | undefined }
  let resolveQueued!: (res: ServerResponse) => void
  const queued = new Promise<ServerResponse>((resolve) => {
    resolveQueued = resolve
  })
  const server = createServer((req, res) => {
    if (req.url === '/ahead') return ahead(res)
    res.end('{"ok":true}')
    state.waited = flushedOrCut(
      res as unknown as Response,
      'finish',
      Deadline.after(200, { clock }),
      () => {
        state.cuts++
      },
    )
    resolveQueued(res)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push(() => {
    server.closeAllConnections()
    server.close()
  })
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
  closers.push(() => socket.destroy())
  let received = ''
  if (reading) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      received += chunk
    })
  } else socket.pause()
  await once(socket, 'connect')
  socket.write('GET /ahead HTTP/1.1\r\nhost: x\r\n\r\nGET /small HTTP/1.1\r\nhost: x\r\n\r\n')
  const res = await queued
  expect(res.socket, 'queued behind /ahead').toBeNull()
  return { clock, state, socket, res, received: () => received }
}

/** Ended at once, not waited for: 64 MiB in one write. */
const big = (res: ServerResponse) => void res.end(Buffer.alloc(64 * 1024 * 1024, 'a'))

it('an answer queued behind one the client never takes is cut once its connection stalls', async () => {
  const { clock, state, res } = await queuedBehind(big)
  clock.advance(200) // its deadline: it waits for its turn, watching the connection
  clock.advance(QUEUED_STALL_MS - 1)
  expect(state.cuts, 'not before a whole period without progress').toBe(0)
  // The OS may still have taken some of the bytes ahead after the deadline
  // (a period with progress): within a few periods nothing moves.
  for (let period = 0; period < 3 && state.cuts === 0; period++) clock.advance(QUEUED_STALL_MS)
  expect(state.cuts).toBe(1)
  // Settled within the turn (the cut is synchronous; the wait ends in microtasks).
  const pending = Symbol('pending')
  const settled = await Promise.race([
    state.waited,
    new Promise((resolve) => setImmediate(resolve, pending)),
  ])
  expect(settled, 'the wait ended').not.toBe(pending)
  // The connection, closed by the gateway (the paused client would not see it).
  expect(res.req.socket.destroyed).toBe(true)
})

it('an answer queued behind a long one the client reads is not cut, however long the one ahead runs', async () => {
  // The host app's own route (or its own deadline() above the gateway's)
  // may run longer than any bound the gateway knows: the connection is
  // watched, not timed.
  let endAhead!: () => void
  const { clock, state, socket, received } = await queuedBehind(
    (res) => {
      res.write('started;')
      endAhead = () => res.end('END-OF-LONG')
    },
    { reading: true },
  )
  clock.advance(200)
  for (let period = 0; period < 10; period++) clock.advance(QUEUED_STALL_MS)
  expect(state.cuts, 'ten periods with nothing waiting to go out').toBe(0)
  endAhead()
  await state.waited
  expect(state.cuts).toBe(0)
  expect(clock.pendingTimers, 'the grace its turn started, released').toBe(0)
  while (!received().includes('{"ok":true}')) await once(socket, 'data')
  expect(received()).toContain('END-OF-LONG')
})

it('an answer queued behind one big answer a slow client is still reading is not cut; once it stops reading, it is', async () => {
  // One write of 64 MiB: its bytes count as written and as buffered until
  // the whole write is done, so only libuv's write queue shows the client
  // taking it piece by piece.
  const { clock, state, socket } = await queuedBehind(big)
  /** The client reads at least `bytes`, then stops again. */
  const readAtLeast = (bytes: number) =>
    new Promise<void>((resolve) => {
      let read = 0
      const onData = (chunk: Buffer) => {
        read += chunk.length
        if (read < bytes) return
        socket.off('data', onData)
        socket.pause()
        resolve()
      }
      socket.on('data', onData)
      socket.resume()
    })

  clock.advance(200)
  for (let period = 0; period < 3; period++) {
    await readAtLeast(8 * 1024 * 1024) // a slow reader: 8 MiB a period
    clock.advance(QUEUED_STALL_MS)
    expect(state.cuts, `period ${period}: cut while the client was reading`).toBe(0)
  }
  // It stops reading: within a few periods nothing moves, and it is cut.
  for (let period = 0; period < 3 && state.cuts === 0; period++) clock.advance(QUEUED_STALL_MS)
  expect(state.cuts).toBe(1)
  await state.waited
})
