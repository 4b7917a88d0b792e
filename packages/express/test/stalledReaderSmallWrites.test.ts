import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, expressChannels, type IngressEndMessage } from '../src/index.js'
import { RESPOND_END_GRACE_MS } from '../src/watchEnd.js'
import { LAST_CHUNK } from './support/lastChunk.js'
import { readAll } from './support/readAll.js'
import { deferred, listen, majors, type Running } from './support/servers.js'

/**
 * A stream of small events (8 KB, an SSE feed) to a client that stopped
 * reading: once the OS buffers are full, what the handler writes waits in
 * Node's buffer, but below the socket's high-water mark (16 KB) no write
 * returns false, so nothing says "waiting for 'drain'". The deadline ended
 * such a stream (`res.end()`), an end that could never be flushed: the
 * socket stayed open for good (Node's `server.timeout` is 0), the request
 * never ended (no end event), its buffers held. `test/stalledReader.test.ts`
 * covers the 64 KB writes that do wait for 'drain' (destroyed at once).
 */
describe.each(majors)('a stream of small writes whose client stopped reading ($name)', (major) => {
  let server: Running | undefined
  let client: Socket | undefined
  afterEach(async () => {
    client?.destroy()
    await server?.close()
    server = undefined
  })

  async function stalledStream(clock: ManualClock) {
    const app = major.app()
    // Whether a write waits for 'drain' once the OS buffers are full.
    const full = deferred<boolean>()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.get(
      '/events',
      major.route(async (_req, res) => {
        res.setHeader('content-type', 'text/event-stream')
        const event = `data: ${'x'.repeat(8 * 1024)}\n\n`
        // Until the OS takes no more: one event then waits in Node's buffer,
        // below the high-water mark, so the write returned true.
        do {
          res.write(event)
          await new Promise((resolve) => setImmediate(resolve))
        } while (res.writableLength === 0)
        full.resolve(res.writableNeedDrain)
        await new Promise(() => {})
      }),
    )
    server = await listen(app)
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    client = socket
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.pause() // reads nothing
    socket.write('GET /events HTTP/1.1\r\nhost: 127.0.0.1\r\nx-deadline-remaining-ms: 1000\r\n\r\n')
    // The case at hand: nothing says the client stopped reading.
    expect(await full.promise).toBe(false)
    return { socket, served: server.connections[0] as Socket }
  }

  it('is destroyed when its end is still unflushed a grace after the deadline: the request ends, the client sees a cut stream', async () => {
    const clock = new ManualClock()
    const ends: IngressEndMessage[] = []
    const onEnd = (m: IngressEndMessage) => ends.push(m)
    expressChannels.end.subscribe(onEnd)
    try {
      const { socket, served } = await stalledStream(clock)
      const closed = once(served, 'close')
      clock.advance(1000) // the deadline: the stream is ended, an end that cannot leave
      expect(served.destroyed).toBe(false)
      clock.advance(RESPOND_END_GRACE_MS)
      // A guard, not a measurement: without the fix the socket stays open for good.
      const outcome = await Promise.race([
        closed.then(() => 'closed'),
        new Promise((resolve) => setTimeout(resolve, 5000, 'still open')),
      ])
      expect(outcome).toBe('closed')
      expect(ends.map((m) => [m.statusCode, m.outcome])).toEqual([[200, 'expired']])
      // No terminating chunk: the client can tell the stream was cut.
      const { head, tail } = await readAll(socket)
      expect(head.startsWith('HTTP/1.1 200 OK')).toBe(true)
      // No last chunk at all, with a trailer or without.
      expect(tail).not.toMatch(LAST_CHUNK)
    } finally {
      expressChannels.end.unsubscribe(onEnd)
    }
  })

  it('a client that reads again within the grace gets the clean end, and keeps its connection', async () => {
    const clock = new ManualClock()
    const ended = deferred<IngressEndMessage>()
    const onEnd = (m: IngressEndMessage) => ended.resolve(m)
    expressChannels.end.subscribe(onEnd)
    try {
      const { socket, served } = await stalledStream(clock)
      clock.advance(1000)
      // Reading again: the end flushes (a complete, shorter body, as documented).
      const { tail } = await readAll(socket, (t) =>
        t.endsWith('0\r\nx-deadline-expired: 1\r\n\r\n'),
      )
      expect(tail.endsWith('\r\n0\r\nx-deadline-expired: 1\r\n\r\n')).toBe(true)
      expect((await ended.promise).outcome).toBe('expired')
      clock.advance(RESPOND_END_GRACE_MS)
      expect(served.destroyed).toBe(false)
    } finally {
      expressChannels.end.unsubscribe(onEnd)
    }
  })
})
