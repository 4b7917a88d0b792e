import { connect } from 'node:net'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ErrorRequestHandler, Request } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { deferred, listen, majors, type Running } from './support/servers.js'
import { untilSent } from './support/untilSent.js'

/**
 * The 504 goes out while the upload is still arriving, then the client
 * leaves mid-upload — undici closes its socket whenever the answer comes
 * before its upload is sent. Node aborts a request whose connection closes
 * only while its response is unfinished; the 504 had finished it, so nothing
 * told the request: whoever read its body (body-parser, a `for await` over
 * `req`, `pipeline(req, file)`) waited for good. The route's `finally` (a
 * temp file removed, an in-flight gauge decremented, a slot released) never
 * ran. Now the read ends as for a client that leaves before the answer:
 * Node's `aborted` (ECONNRESET), body-parser's "request aborted".
 */
describe.each(majors)('a client leaving mid-upload after the 504 ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function leaveAfterAnswer(read: ((req: Request) => Promise<unknown>) | 'json') {
    const failed = deferred<unknown>()
    const passedOn: unknown[] = []
    const app = major.app()
    app.use(deadline({ reserveMs: 0 }))
    if (read === 'json') {
      app.use(major.json())
      // body-parser's error, on its way to deadlineErrors().
      const seen: ErrorRequestHandler = (error, _req, _res, next) => {
        failed.resolve(error)
        next(error)
      }
      app.post('/upload', (_req, res) => {
        res.json({ stored: true })
      })
      app.use(seen)
    } else {
      app.post(
        '/upload',
        major.route(async (req, res, next) => {
          try {
            await read(req)
            res.json({ stored: true })
          } catch (error) {
            failed.resolve(error)
            next(error)
          }
        }),
      )
    }
    app.use(deadlineErrors())
    const userHandler: ErrorRequestHandler = (error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).json({ error: 'internal' })
    }
    app.use(userHandler)
    server = await listen(app)
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    socket.setEncoding('latin1')
    socket.on('error', () => {})
    socket.write(
      'POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 200\r\nx-deadline-remaining-ms: 50\r\n\r\n{"a":"',
    )
    const answer = await untilSent(socket, '"deadline_exceeded"')
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 504 Gateway Timeout')
    socket.destroy()
    // Before, this never settled: the test's own timeout failed it.
    const error = await failed.promise
    // The error handlers run synchronously from `next`.
    return { error, passedOn }
  }

  it('for await (const chunk of req) ends with Node`s aborted, swallowed by deadlineErrors()', async () => {
    const { error, passedOn } = await leaveAfterAnswer(async (req) => {
      for await (const _chunk of req) {
        // stored
      }
    })
    expect(error).toMatchObject({ code: 'ECONNRESET', message: 'aborted' })
    expect(passedOn).toEqual([])
  })

  it('pipeline(req, sink) without the signal rejects, swallowed by deadlineErrors()', async () => {
    const { error, passedOn } = await leaveAfterAnswer((req) =>
      pipeline(req, new Writable({ write: (_chunk, _encoding, done) => done() })),
    )
    expect(error).toMatchObject({ code: 'ECONNRESET', message: 'aborted' })
    expect(passedOn).toEqual([])
  })

  it('express.json() ends with its "request aborted", swallowed by deadlineErrors()', async () => {
    const { error, passedOn } = await leaveAfterAnswer('json')
    expect(error).toMatchObject({ type: 'request.aborted', status: 400 })
    expect(passedOn).toEqual([])
  })
})
