import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

// A handler that will stream and report in trailers declares them first
// (`res.setHeader('Trailer', 'Server-Timing')`). A declared trailer is
// valid only on a chunked body, and Node throws ERR_HTTP_TRAILER_INVALID
// when one goes out on a response with a Content-Length — as the 504 has.
// The deadline's 504 threw from its timer: an uncaught exception that took
// the process down, and the caller got no answer.

describe.each(majors)('a Trailer the handler declared before the deadline ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it.each([
    { how: 'the plain 504', options: {} },
    {
      how: "respond's answer",
      options: {
        respond: (_req: unknown, res: import('express').Response) => {
          res.status(504).json({ error: 'timeout' })
        },
      },
    },
  ])(
    'is dropped from $how: the 504 goes out, the connection serves the next request',
    async ({ options }) => {
      const app = major.app()
      app.use(deadline({ reserveMs: 10, ...options }))
      app.get('/stream', (_req, res) => {
        res.setHeader('Trailer', 'Server-Timing')
        // …then slow work before the first chunk.
      })
      app.get('/ok', (_req, res) => {
        res.send('ok')
      })
      app.use(deadlineErrors())
      server = await listen(app)
      const agent = client({ connections: 1, headersTimeout: 2000 })
      const res = await request(`${server.url}/stream`, {
        headers: { 'x-deadline-remaining-ms': '60' },
        dispatcher: agent,
      })
      await res.body.dump()
      expect(res.statusCode).toBe(504)
      expect(res.headers.trailer).toBeUndefined()
      const next = await request(`${server.url}/ok`, { dispatcher: agent })
      expect(await next.body.text()).toBe('ok')
      expect(server.connections).toHaveLength(1)
    },
  )
})

describe.each(majors)('a Trailer a middleware declared before strict refuses ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is dropped from the 400: it goes out, the connection serves the next request', async () => {
    const app = major.app()
    app.use((_req, res, next) => {
      res.setHeader('Trailer', 'Server-Timing')
      next()
    })
    app.use(deadline({ strict: true }))
    app.get('/stream', () => {})
    server = await listen(app)
    const agent = client({ connections: 1, headersTimeout: 2000 })
    const res = await request(`${server.url}/stream`, {
      headers: { 'x-deadline-remaining-ms': 'soon' },
      dispatcher: agent,
    })
    expect(await res.body.json()).toMatchObject({ error: 'invalid_deadline_header' })
    expect(res.statusCode).toBe(400)
    expect(res.headers.trailer).toBeUndefined()
    // Its own headers stay: a cache must not keep the refusal.
    expect(res.headers['cache-control']).toBe('no-store')
    expect(server.connections).toHaveLength(1)
  })
})
