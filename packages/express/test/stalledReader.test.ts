import { once } from 'node:events'
import { connect } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { deferred, listen, majors, type Running } from './support/servers.js'

describe.each(majors)('a stream whose client stopped reading ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is closed when its deadline runs out: the end it would write could never be flushed', async () => {
    const clock = new ManualClock()
    const app = major.app()
    const full = deferred()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.get(
      '/stream',
      major.route(async (_req, res) => {
        res.setHeader('content-type', 'text/event-stream')
        const chunk = `data: ${'x'.repeat(64 * 1024)}\n\n`
        // Write until the OS takes no more (the client reads nothing): what
        // is left waits in the response's own buffer, for a 'drain' that
        // never comes.
        do {
          res.write(chunk)
          await new Promise((resolve) => setImmediate(resolve))
        } while (res.writableLength === 0)
        full.resolve()
        await new Promise(() => {})
      }),
    )
    server = await listen(app)
    const { port } = new URL(server.url)
    const socket = connect(Number(port), '127.0.0.1')
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.pause() // never reads a byte
    socket.write(`GET /stream HTTP/1.1\r\nhost: 127.0.0.1\r\nx-deadline-remaining-ms: 1000\r\n\r\n`)
    await full.promise
    const served = server.connections[0]!
    const closed = once(served, 'close')
    clock.advance(1000)
    // A guard, not a measurement: without the fix the socket stays open for good.
    const outcome = await Promise.race([
      closed.then(() => 'closed'),
      new Promise((resolve) => setTimeout(resolve, 5000, 'still open')),
    ])
    expect(outcome).toBe('closed')
    socket.destroy()
  })
})
