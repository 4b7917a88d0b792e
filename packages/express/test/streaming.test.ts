import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  expressChannels,
  type IngressExpireMessage,
  type IngressLateWriteMessage,
} from '../src/index.js'
import { aborted, client, listen, majors, type Running, record } from './support/servers.js'

describe.each(majors)('a response already streaming when time runs out ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is ended cleanly at the deadline: the client reads a complete body, the connection stays usable', async () => {
    const app = major.app()
    const late: IngressLateWriteMessage[] = []
    // A fixed reserve, not the adaptive one (10–100 ms, from this process's
    // timer lateness, which this file's own expiries feed): the bound below
    // holds for a reserve of 15 ms at most (150 less it, ended at 135 or
    // later), which a timer lateness of 7 ms, seen twice, already exceeds
    // (2 × 7 + 2 = 16).
    app.use(deadline({ reserveMs: 10, onLateWrite: (event) => late.push(event) }))
    const handlerDone = new Promise<void>((resolve) => {
      app.get(
        '/events',
        major.route(async (req, res) => {
          res.setHeader('content-type', 'text/event-stream')
          res.write('data: one\n\n')
          res.write('data: two\n\n')
          await aborted(req.deadline.signal)
          // A token arriving after the cut.
          res.write('data: three\n\n')
          res.end()
          resolve()
        }),
      )
    })
    server = await listen(app)
    const expired = record<IngressExpireMessage>(expressChannels.expire.name)
    const startedAt = performance.now()
    const res = await request(`${server.url}/events`, {
      headers: { 'x-deadline-remaining-ms': '150' },
      dispatcher: agent,
    })
    expect(res.statusCode).toBe(200)
    expect(res.headers['transfer-encoding']).toBe('chunked')
    const text = await res.body.text()
    const endedAfterMs = performance.now() - startedAt
    await handlerDone
    expired.stop()

    expect(text).toBe('data: one\n\ndata: two\n\n')
    expect(endedAfterMs).toBeGreaterThanOrEqual(135)
    expect(endedAfterMs).toBeLessThan(1000)
    expect(expired.messages).toEqual([
      expect.objectContaining({ stage: 'handler', action: 'ended', budgetMs: 150 }),
    ])
    expect(late.map((e) => e.method)).toEqual(['write', 'end'])

    const next = await request(`${server.url}/missing`, { dispatcher: agent })
    await next.body.dump()
    expect(next.statusCode).toBe(404)
    expect(server.connections).toHaveLength(1)
  })

  it.each([
    {
      how: 'setHeader',
      start: (res: import('node:http').ServerResponse) => res.setHeader('content-length', '1000'),
    },
    {
      // No header stored before it: only Node knows the length it declared.
      how: 'writeHead(status, headers)',
      start: (res: import('node:http').ServerResponse) =>
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' }),
    },
  ])(
    'a fixed-length response (length set with $how) cut short has its socket destroyed rather than lie about its length',
    async ({ start }) => {
      const app = major.app()
      app.disable('x-powered-by')
      // Fixed, as above: an adaptive reserve of 80 ms or more (from the
      // lateness this file's expiries record) expired the 80 ms request on
      // arrival, a 504 where the cut 200 is the point.
      app.use(deadline({ reserveMs: 10 }))
      app.get(
        '/file',
        major.route(async (req, res) => {
          start(res)
          res.write('x'.repeat(100))
          await aborted(req.deadline.signal)
        }),
      )
      server = await listen(app)
      const res = await request(`${server.url}/file`, {
        headers: { 'x-deadline-remaining-ms': '80' },
        dispatcher: agent,
      })
      expect(res.statusCode).toBe(200)
      const readingAt = performance.now()
      await expect(res.body.text()).rejects.toThrow()
      // At the deadline, not when the idle keep-alive socket is closed 5 s later.
      expect(performance.now() - readingAt).toBeLessThan(2000)
    },
  )
})
