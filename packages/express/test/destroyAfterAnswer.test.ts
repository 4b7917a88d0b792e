import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors, type IngressLateWriteMessage } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

/**
 * The proxy pattern: an upstream body (here a stream that stalls) piped into
 * `res` with `stream.pipeline`, the upstream aborted by the request's
 * deadline, and the response dropped when the upstream fails. pipeline
 * destroys every stream in it that has not finished, and the handler drops
 * `res` itself: `res.destroy()` after the deadline answered, which destroyed
 * the socket the 504 (or the ended stream) went out on.
 */
describe.each(majors)('res.destroy() after the deadline answered ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function serve(firstChunk: string | undefined) {
    const app = major.app()
    const late: IngressLateWriteMessage[] = []
    const settled: unknown[] = []
    app.use(deadline({ reserveMs: 5, onLateWrite: (event) => late.push(event) }))
    app.get(
      '/proxy',
      major.route(async (req, res) => {
        const upstream = new Readable({ read() {} })
        if (firstChunk !== undefined) {
          res.setHeader('content-type', 'text/event-stream')
          upstream.push(firstChunk)
        }
        req.deadline.onDone((reason) => upstream.destroy(reason as Error))
        try {
          await pipeline(upstream, res)
        } catch (error) {
          settled.push(error)
          // What a proxy does when its upstream fails (and what pipeline itself
          // does to a response it has not finished): drop the response.
          res.destroy(error as Error)
          throw error
        }
      }),
    )
    app.get('/next', (_req, res) => {
      res.json({ next: true })
    })
    app.use(deadlineErrors())
    server = await listen(app)
    return { url: server.url, late, settled }
  }

  it.each([
    ['nothing written yet: 504', undefined, 504, '"deadline_exceeded"'],
    ['a stream already started: ended', 'data: one\n\n', 200, 'data: one\n\n'],
  ])(
    'is a no-op (%s): the keep-alive socket carries the next request',
    async (_, firstChunk, status, text) => {
      const { url, late, settled } = await serve(firstChunk)
      const agent = client({ connections: 1, pipelining: 2 })
      try {
        // Sent together on one connection: the second waits behind the first.
        const [first, second] = await Promise.all([
          request(`${url}/proxy`, {
            headers: { 'x-deadline-remaining-ms': '80' },
            dispatcher: agent,
          }).then(async (res) => ({ status: res.statusCode, text: await res.body.text() })),
          request(`${url}/next`, { dispatcher: agent }).then(async (res) => ({
            status: res.statusCode,
            body: await res.body.json(),
          })),
        ])
        expect(first.status).toBe(status)
        expect(first.text).toContain(text)
        expect(second).toEqual({ status: 200, body: { next: true } })
        expect(server?.connections).toHaveLength(1)
        expect(server?.connections[0]?.destroyed).toBe(false)
        // pipeline still settles (with the upstream's error), and the call is reported.
        expect(settled).toHaveLength(1)
        expect(late.map((e) => e.method)).toContain('destroy')
      } finally {
        await agent.close()
      }
    },
  )
})
