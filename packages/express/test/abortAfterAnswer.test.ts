import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

/**
 * Code that reacts to the deadline's abort at once — `pipeline` given the
 * signal destroys the response, a listener writes its own error — runs after
 * the deadline's 504 is written, so the client gets that 504 on a connection
 * that stays usable. Before, the signal aborted first: the client got a reset
 * (pipeline) or the handler's 503.
 */
describe.each(majors)("the handler's abort listeners run after the 504 ($name)", (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('pipeline(upstream, res, { signal: req.deadline.signal }): the client gets the 504, and the next request its answer on the same connection', async () => {
    const app = major.app()
    app.use(deadline({ reserveMs: 5 }))
    app.get(
      '/proxy',
      major.route(async (req, res) => {
        const stalled = new Readable({ read() {} })
        await pipeline(stalled, res, { signal: req.deadline.signal }).catch(() => {})
      }),
    )
    app.get('/next', (_req, res) => {
      res.json({ next: true })
    })
    app.use(deadlineErrors())
    server = await listen(app)
    const agent = client({ connections: 1, pipelining: 2 })
    try {
      const [first, second] = await Promise.all([
        request(`${server.url}/proxy`, {
          headers: { 'x-deadline-remaining-ms': '80' },
          dispatcher: agent,
        }).then(async (res) => ({ status: res.statusCode, body: await res.body.json() })),
        request(`${server.url}/next`, { dispatcher: agent }).then(async (res) => ({
          status: res.statusCode,
          body: await res.body.json(),
        })),
      ])
      expect(first.status).toBe(504)
      expect(first.body).toMatchObject({ error: 'deadline_exceeded' })
      expect(second).toEqual({ status: 200, body: { next: true } })
      expect(server.connections).toHaveLength(1)
    } finally {
      await agent.close()
    }
  })

  it('a listener on the signal that writes its own error is a late write: the 504 is the answer', async () => {
    const app = major.app()
    const late: string[] = []
    app.use(deadline({ reserveMs: 5, onLateWrite: (event) => late.push(event.method) }))
    app.get('/work', (req, res) => {
      req.deadline.signal.addEventListener('abort', () => {
        res.status(503).json({ error: 'gave up' })
      })
    })
    server = await listen(app)
    const res = await request(`${server.url}/work`, {
      headers: { 'x-deadline-remaining-ms': '60' },
    })
    expect(res.statusCode).toBe(504)
    expect(await res.body.json()).toMatchObject({ error: 'deadline_exceeded' })
    expect(late.length).toBeGreaterThan(0)
  })
})
