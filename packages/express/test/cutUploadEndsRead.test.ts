import { connect } from 'node:net'
import { addAbortSignal } from 'node:stream'
import { finished } from 'node:stream/promises'
import type { Request } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { deferred, listen, majors, type Running } from './support/servers.js'
import { untilSent } from './support/untilSent.js'

/**
 * A handler reading its upload stops at the deadline the way Node offers
 * (`addAbortSignal(req.deadline.signal, req)`, or `req.destroy()` when the
 * signal aborts): the request is destroyed as the 504 goes out. Node's
 * request then destroys its socket and completes its own destroy — its
 * 'error' and 'close', which a `for await` over it, `finished(req)` or a web
 * stream wait for — only once that socket has closed. After the 504 the
 * socket is kept for the connection's next request (its `destroy` does
 * nothing for this request), so the handler stayed stuck in its read until
 * the client closed the keep-alive connection: its `finally` (a temp file
 * removed, a slot released) never ran while the client kept the connection
 * busy. Without `deadline()`, Node ends the read at once (and the connection).
 */
describe.each(majors)('a handler stopping its read of the upload at the 504 ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function uploadHalf(read: (req: Request) => Promise<unknown>) {
    const done = deferred<unknown>()
    let state = 'reading'
    const app = major.app()
    app.use(deadline({ reserveMs: 0 }))
    app.post(
      '/upload',
      major.route(async (req, res) => {
        try {
          await read(req)
          res.json({ stored: true })
        } catch (error) {
          done.resolve(error)
          throw error
        } finally {
          state = 'ended'
        }
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
    socket.write(
      'POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n' +
        'x-deadline-remaining-ms: 50\r\n\r\n',
    )
    socket.write('a'.repeat(100))
    const first = await untilSent(socket, '"deadline_exceeded"')
    expect(first.split('\r\n')[0]).toBe('HTTP/1.1 504 Gateway Timeout')
    // The read ended with the 504 (the connection still open), not when
    // the client closes it: before, this read 'reading'.
    const stateAtAnswer = state
    // The rest of the upload is dropped and the connection serves the next request.
    socket.write('b'.repeat(100))
    socket.write('GET /next HTTP/1.1\r\nHost: x\r\n\r\n')
    const next = await untilSent(
      socket,
      'next ok',
      first.slice(first.indexOf('"deadline_exceeded"')),
    )
    expect(next).toContain('HTTP/1.1 200 OK')
    expect({ stateAtAnswer, stateAfterNext: state }).toEqual({
      stateAtAnswer: 'ended',
      stateAfterNext: 'ended',
    })
    expect(server.connections).toHaveLength(1)
    socket.destroy()
    return done.promise
  }

  it('for await over addAbortSignal(req.deadline.signal, req) ends at the 504', async () => {
    const error = await uploadHalf(async (req) => {
      for await (const _chunk of addAbortSignal(req.deadline.signal, req)) {
        // stored
      }
    })
    expect(error).toMatchObject({ name: 'AbortError' })
  })

  it('finished(req) after req.destroy() on the signal settles at the 504', async () => {
    const error = await uploadHalf(async (req) => {
      req.deadline.signal.addEventListener('abort', () => req.destroy(req.deadline.signal.reason))
      req.resume()
      await finished(req)
    })
    expect(error).toMatchObject({ name: 'DeadlineExceededError' })
  })
})
