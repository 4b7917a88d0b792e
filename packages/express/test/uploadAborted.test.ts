import { request as httpRequest } from 'node:http'
import { isClientClosed } from '@hourglass/core'
import type { ErrorRequestHandler } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors, expressChannels, type IngressEndMessage } from '../src/index.js'
import { deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * A client that leaves mid-upload is seen first by the body parser: the
 * request's 'aborted' event fails it with "request aborted" before the
 * response's 'close'. Passed on, the user's error handler wrote a 500 for
 * nobody (and logged it), and that 500's 'finish' ended the request as `ok`:
 * its deadline never cancelled, nothing said the client had left.
 */
describe.each(majors)('a client that leaves mid-upload ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is a client-closed request: no 500 for nobody, the deadline cancelled with ClientClosedError', async () => {
    const app = major.app()
    const reading = deferred<AbortSignal>()
    const passedOn: unknown[] = []
    app.use(deadline({ reserveMs: 10 }))
    app.use((req, _res, next) => {
      reading.resolve(req.deadline.signal)
      next()
    })
    app.use(major.json())
    app.post('/', (_req, res) => {
      res.json({ parsed: true })
    })
    app.use(deadlineErrors())
    const userHandler: ErrorRequestHandler = (error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).json({ error: 'internal' })
    }
    app.use(userHandler)
    server = await listen(app)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    const closed = record(expressChannels.clientClosed.name)

    const { port } = new URL(server.url)
    const upload = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '100' },
    })
    upload.on('error', () => {})
    upload.write('{"half": ')
    const signal = await reading.promise
    upload.destroy()

    await ends.count(1)
    ends.stop()
    closed.stop()
    expect(passedOn).toEqual([])
    expect(ends.messages[0]?.outcome).toBe('client-closed')
    expect(closed.messages).toHaveLength(1)
    expect(signal.aborted).toBe(true)
    expect(isClientClosed(signal.reason)).toBe(true)
  })
})
