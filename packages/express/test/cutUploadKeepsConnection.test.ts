import { connect } from 'node:net'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { deferred, listen, majors, type Running } from './support/servers.js'
import { untilSent } from './support/untilSent.js'

/**
 * A 504 written while the upload is still coming, in a handler that reads
 * the body as the README advises — `pipeline(req, sink, { signal:
 * req.deadline.signal })` — which destroys the request as the 504 goes out.
 * Node then stopped reading the socket (its parser pauses it for the chunk
 * the destroyed request refuses, and nothing resumed it): the rest of the
 * upload was never read, and the next request on the keep-alive connection
 * was never answered. The README promises the rest of the upload is read
 * and dropped, then the socket serves the next request.
 */
describe.each(majors)('a 504 mid-upload to a handler piping the body ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  const HALF = 256 * 1024

  it('leaves the keep-alive connection serving: the rest of the upload is dropped and a pipelined request after it is answered', async () => {
    const cut = deferred<unknown>()
    const app = major.app()
    app.use(deadline({ reserveMs: 0 }))
    app.post(
      '/upload',
      major.route(async (req, res) => {
        // A store slower than the upload: it takes one chunk and never the
        // next, so Node stops reading the socket for it well before the
        // deadline (back-pressure), as it would for a slow disk.
        let taken = 0
        const sink = new Writable({
          write: (_chunk, _encoding, done) => {
            if (taken++ === 0) done()
          },
        })
        try {
          await pipeline(req, sink, { signal: req.deadline.signal })
        } catch (error) {
          cut.resolve(error)
          throw error
        }
        res.json({ stored: true })
      }),
    )
    app.get('/next', (_req, res) => {
      res.send('next ok')
    })
    app.use(deadlineErrors())
    server = await listen(app)
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    socket.setEncoding('latin1')
    socket.on('error', () => {})
    // Half the body, more than the handler takes in before its time runs out.
    socket.write(
      `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 * HALF}\r\n` +
        'x-deadline-remaining-ms: 50\r\n\r\n',
    )
    socket.write(Buffer.alloc(HALF, 'a'))
    const first = await untilSent(socket, '"deadline_exceeded"')
    expect(first.split('\r\n')[0]).toBe('HTTP/1.1 504 Gateway Timeout')
    expect((await cut.promise) as Error).toMatchObject({ name: 'AbortError' })
    // The rest of the upload, then the next request on the same connection.
    const rest = first.slice(first.indexOf('"deadline_exceeded"'))
    socket.write(Buffer.alloc(HALF, 'b'))
    socket.write('GET /next HTTP/1.1\r\nHost: x\r\n\r\n')
    // Broken, nothing more came on the socket: the test's own timeout fails it.
    const next = await untilSent(socket, 'next ok', rest)
    expect(next).toContain('HTTP/1.1 200 OK')
    expect(server.connections).toHaveLength(1)
    socket.destroy()
  })
})
