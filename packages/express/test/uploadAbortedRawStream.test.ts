import { request as httpRequest } from 'node:http'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { isClientClosed } from '@hourglass/core'
import type { ErrorRequestHandler, Request } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors, expressChannels, type IngressEndMessage } from '../src/index.js'
import { deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * A route that reads its upload itself — `pipeline(req, file)`, `for await
 * (const chunk of req)` — and passes what fails to `next`, as Express's
 * docs show. A client that leaves mid-upload fails that read with Node's own
 * `aborted` (ECONNRESET): body-parser's "request aborted" for the same
 * departure was swallowed, this one reached the app's error handler, which
 * logged it and wrote a 500 for nobody.
 */
describe.each(majors)('a client that leaves mid-upload read as a stream ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function leaveMidUpload(read: (req: Request) => Promise<unknown>) {
    const app = major.app()
    const reading = deferred<AbortSignal>()
    const failed = deferred<unknown>()
    const passedOn: unknown[] = []
    app.use(deadline({ reserveMs: 10 }))
    app.post(
      '/',
      major.route(async (req, res, next) => {
        reading.resolve(req.deadline.signal)
        try {
          await read(req)
          res.json({ stored: true })
        } catch (error) {
          failed.resolve(error)
          next(error)
        }
      }),
    )
    app.use(deadlineErrors())
    const userHandler: ErrorRequestHandler = (error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).json({ error: 'internal' })
    }
    app.use(userHandler)
    server = await listen(app)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    const { port } = new URL(server.url)
    const upload = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'content-length': '100' },
    })
    upload.on('error', () => {})
    upload.write('half of it')
    const signal = await reading.promise
    upload.destroy()
    const error = await failed.promise
    await ends.count(1)
    ends.stop()
    // What the handler passed on has been handled (or not) by now: the
    // error handlers run synchronously from `next`.
    return { error, passedOn, outcome: ends.messages[0]?.outcome, signal }
  }

  it('pipeline(req, …): not passed on; ends client-closed', async () => {
    const got = await leaveMidUpload((req) =>
      pipeline(req, new Writable({ write: (_chunk, _encoding, done) => done() })),
    )
    expect(got.error).toMatchObject({ code: 'ECONNRESET', message: 'aborted' })
    expect(got.passedOn).toEqual([])
    expect(got.outcome).toBe('client-closed')
    expect(isClientClosed(got.signal.reason)).toBe(true)
  })

  it('for await (const chunk of req): not passed on; ends client-closed', async () => {
    const got = await leaveMidUpload(async (req) => {
      for await (const _chunk of req);
    })
    expect(got.error).toMatchObject({ code: 'ECONNRESET', message: 'aborted' })
    expect(got.passedOn).toEqual([])
    expect(got.outcome).toBe('client-closed')
  })
})
