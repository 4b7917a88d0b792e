import { once } from 'node:events'
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import type { NextFunction, Request, Response } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { aborted, client, listen, majors, type Running } from './support/servers.js'

// A response already streaming when time runs out is ended cleanly: its
// head said 200 and the caller read a shorter body it could not tell from
// a whole answer (an empty 200 after a `flushHeaders()`). Its last chunk
// now says the deadline cut it, in the trailer section: `x-deadline-expired: 1`.
// On a started 200 the trailer means "this body was cut", whoever's budget
// ran out: a cap of the server's own (maxMs, defaultMs) sends it too, though
// its 504 goes without the header (the caller's budget is not gone).
const CALLERS = { 'x-deadline-remaining-ms': '100' }

describe.each(majors)('a chunked response the deadline ends ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function serve(start: (res: Response) => void) {
    const clock = new ManualClock()
    const app = major.app()
    app.use(deadline({ clock, reserveMs: 0, defaultMs: 100, maxMs: 100 }))
    app.get(
      '/feed',
      major.route(async (req, res) => {
        start(res)
        // The head is on the wire: time runs out with the body under way.
        setImmediate(() => clock.advance(100))
        await aborted(req.deadline.signal)
      }),
    )
    app.get('/ok', (_req, res) => {
      res.send('ok')
    })
    server = await listen(app)
    return server
  }

  it.each([
    {
      how: 'after some events',
      start: (res: Response) => {
        res.setHeader('content-type', 'text/event-stream')
        res.write('data: one\n\n')
      },
      body: 'data: one\n\n',
    },
    {
      how: 'after flushHeaders() with nothing written',
      start: (res: Response) => {
        res.setHeader('content-type', 'application/json')
        res.flushHeaders()
      },
      body: '',
    },
  ])(
    'carries x-deadline-expired: 1 in its trailer ($how); the connection serves the next request',
    async ({ start, body }) => {
      const running = await serve(start)
      const agent = client({ connections: 1 })
      const res = await request(`${running.url}/feed`, { dispatcher: agent, headers: CALLERS })
      expect(res.statusCode).toBe(200)
      expect(await res.body.text()).toBe(body)
      expect(res.trailers).toEqual({ 'x-deadline-expired': '1' })
      const next = await request(`${running.url}/ok`, { dispatcher: agent })
      expect(await next.body.text()).toBe('ok')
      expect(running.connections).toHaveLength(1)
      await agent.close()
    },
  )

  it.each([
    { whose: "the caller's budget", headers: CALLERS },
    {
      whose: "the server's maxMs (the caller sent 5 s)",
      headers: { 'x-deadline-remaining-ms': '5000' },
    },
    { whose: "the server's defaultMs (the caller sent none)", headers: {} },
  ])(
    'carries the trailer when the cut was $whose: a cut stream never reads as whole',
    async ({ headers }) => {
      const running = await serve((res) => {
        res.setHeader('content-type', 'application/json')
        res.flushHeaders()
      })
      const agent = client({ connections: 1 })
      const res = await request(`${running.url}/feed`, { dispatcher: agent, headers })
      expect(res.statusCode).toBe(200)
      expect(await res.body.text()).toBe('')
      expect(res.trailers).toEqual({ 'x-deadline-expired': '1' })
      await agent.close()
    },
  )

  it('keeps the trailers the handler added before the deadline', async () => {
    const running = await serve((res) => {
      res.setHeader('Trailer', 'Server-Timing')
      res.write('part')
      res.addTrailers({ 'server-timing': 'db;dur=12' })
    })
    const agent = client({ connections: 1 })
    const res = await request(`${running.url}/feed`, { dispatcher: agent, headers: CALLERS })
    expect(await res.body.text()).toBe('part')
    expect(res.trailers).toEqual({ 'server-timing': 'db;dur=12', 'x-deadline-expired': '1' })
    await agent.close()
  })
})

describe('a stream the deadline ends on an HTTP/2 compat server', () => {
  it('carries x-deadline-expired: 1 in its trailers', async () => {
    const clock = new ManualClock()
    const middleware = deadline({ clock, reserveMs: 0, defaultMs: 100 })
    const server = http2.createServer((req, res) => {
      const next = (() => {
        res.write('data: one\n\n')
        setImmediate(() => clock.advance(100))
      }) as NextFunction
      middleware(req as unknown as Request, res as unknown as Response, next)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    try {
      const stream = session.request({ ':path': '/feed', ...CALLERS })
      stream.setEncoding('utf8')
      let body = ''
      stream.on('data', (chunk: string) => {
        body += chunk
      })
      let trailers: http2.IncomingHttpHeaders = {}
      stream.on('trailers', (received: http2.IncomingHttpHeaders) => {
        trailers = received
      })
      await once(stream, 'close')
      expect(body).toBe('data: one\n\n')
      expect(trailers['x-deadline-expired']).toBe('1')
    } finally {
      session.destroy()
      server.close()
    }
  })
})
