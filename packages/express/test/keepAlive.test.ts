import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { aborted, client, listen, majors, type Running } from './support/servers.js'

describe.each(majors)('keep-alive connections ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  /**
   * `/slow` waits for its deadline, then fails the way real code does: the
   * aborted downstream call rejects and the error goes to Express's final
   * handler (no deadlineErrors() installed) — which destroys `req.socket`
   * when headers were sent.
   */
  function app(withDeadline: boolean) {
    const a = major.app()
    if (withDeadline) a.use(deadline({ reserveMs: 5 }))
    a.get(
      '/slow',
      major.route(async (req, res) => {
        if (withDeadline) {
          await aborted(req.deadline.signal)
          throw req.deadline.signal.reason
        }
        // The control: what a timeout middleware writing its own 504 leaves behind.
        res.status(504).json({ error: 'timeout' })
        throw new Error('late failure after the response was sent')
      }),
    )
    a.get('/fast/:n', (req, res) => {
      res.json({ n: Number(req.params.n) })
    })
    return a
  }

  async function mixedTraffic(agent: ReturnType<typeof client>, url: string) {
    const paths = [
      '/fast/0',
      '/slow',
      '/fast/1',
      '/fast/2',
      '/slow',
      '/fast/3',
      '/fast/4',
      '/slow',
      '/fast/5',
    ]
    return Promise.all(
      paths.map(async (path) => {
        try {
          const res = await request(`${url}${path}`, {
            headers: path === '/slow' ? { 'x-deadline-remaining-ms': '60' } : {},
            dispatcher: agent,
          })
          return { path, status: res.statusCode, body: await res.body.json() }
        } catch (error) {
          return { path, status: 0, body: String(error) }
        }
      }),
    )
  }

  it.each([
    ['one connection, one request at a time', { connections: 1 }],
    ['one connection, pipelined 3 deep', { connections: 1, pipelining: 3 }],
  ])('a 504 never destroys the socket other requests share (%s)', async (_, options) => {
    server = await listen(app(true))
    const agent = client(options)
    try {
      const results = await mixedTraffic(agent, server.url)
      for (const r of results) {
        if (r.path === '/slow') {
          expect(r).toMatchObject({
            status: 504,
            body: { error: 'deadline_exceeded', budgetMs: 60 },
          })
        } else {
          expect(r).toEqual({ path: r.path, status: 200, body: { n: Number(r.path.slice(6)) } })
        }
      }
      expect(server.connections).toHaveLength(1)
      expect(server.connections[0]?.destroyed).toBe(false)
    } finally {
      await agent.close()
    }
  })

  it('control: without deadline(), Express destroys the shared socket on an error after headers were sent', async () => {
    server = await listen(app(false))
    const agent = client({ connections: 1, pipelining: 3 })
    try {
      const results = await mixedTraffic(agent, server.url)
      // Some requests queued behind a /slow on its socket are reset, or the client reconnects.
      const failedOrReconnected =
        results.some((r) => r.status === 0) || server.connections.length > 1
      expect(failedOrReconnected).toBe(true)
    } finally {
      await agent.close()
    }
  })
})
