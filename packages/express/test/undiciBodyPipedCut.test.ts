import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough, type Transform } from 'node:stream'
import { createGzip } from 'node:zlib'
import { ManualClock } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * The proxy everyone writes: an upstream's undici body piped into the
 * response with a plain `pipe`, no 'error' listener on it. When the deadline
 * ends the stream or the client leaves, the ingress destroys that body (Node
 * only pauses a pipe's source), and undici turns a destroy without an error
 * into its own `RequestAbortedError`, emitted: with nobody listening, that
 * was an uncaught exception, and the host process exited.
 */

interface Upstream {
  url: string
  /** Resolves when the upstream sees its request's response closed. */
  closed: Promise<void>
  close(): Promise<void>
}

/** A real upstream that streams slowly: one event, then nothing more until it is closed. */
async function slowUpstream(): Promise<Upstream> {
  const closed = deferred()
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: first\n\n')
    res.on('close', () => closed.resolve())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/`,
    closed: closed.promise,
    async close() {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}

/**
 * Every uncaught exception while it listens. Vitest's own listener stays:
 * this one only records, so the test can say what went wrong.
 */
function uncaught() {
  const seen: unknown[] = []
  const first = deferred()
  const listener = (error: unknown) => {
    seen.push(error)
    first.resolve()
  }
  process.on('uncaughtException', listener)
  return { seen, first: first.promise, stop: () => process.off('uncaughtException', listener) }
}

interface Piped {
  body: { destroyed: boolean }
  /** Resolves on the body's 'close'. */
  closed: Promise<void>
}

describe.each(majors)('an undici body piped into the response, cut ($name)', (major) => {
  let server: Running | undefined
  let upstream: Upstream | undefined
  let spy: ReturnType<typeof uncaught> | undefined
  const agent = client()
  const upstreamAgent = new Agent()
  afterAll(() => upstreamAgent.close())
  afterEach(async () => {
    spy?.stop()
    spy = undefined
    await server?.close()
    server = undefined
    await upstream?.close()
    upstream = undefined
  })

  async function proxy(clock: ManualClock, through?: () => Transform) {
    const up = await slowUpstream()
    upstream = up
    const app = major.app()
    const piped = deferred<Piped>()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.get(
      '/events',
      major.route(async (_req, res) => {
        const { body } = await request(up.url, { dispatcher: upstreamAgent })
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        if (through === undefined) body.pipe(res)
        else body.pipe(through()).pipe(res)
        // Its 'close' comes right after its 'error' — never, when that
        // 'error' was thrown: the test waits for either.
        const closed = new Promise<void>((resolve) => body.once('close', () => resolve()))
        piped.resolve({ body, closed })
      }),
    )
    server = await listen(app)
    return { up, piped: piped.promise }
  }

  /** The body's destroy has run its course: its 'close', or an uncaught exception first. */
  async function settled({ closed }: Piped) {
    await Promise.race([closed, spy?.first])
  }

  // Through a transform (`body.pipe(gzip).pipe(res)`), the stream unpiped
  // from the response is the transform, which Node's own pipe listens to for
  // errors: destroyed with the reason, that listener threw it on (nobody
  // else listened), and the body feeding it was left open, paused.
  const chains: [string, (() => Transform) | undefined][] = [
    ['piped straight', undefined],
    ['through a PassThrough', () => new PassThrough()],
    ['through gzip', () => createGzip()],
  ]

  it.each(chains)(
    'the deadline ends the stream (%s): the upstream request is closed and nothing is thrown',
    async (_, through) => {
      const clock = new ManualClock()
      const { up, piped } = await proxy(clock, through)
      spy = uncaught()
      const answer = await request(`${server?.url}/events`, {
        headers: { 'x-deadline-remaining-ms': '1000' },
        dispatcher: agent,
      })
      expect(answer.statusCode).toBe(200)
      const proxied = await piped
      const text = answer.body.text()
      clock.advance(1000)
      if (through === undefined) expect(await text).toBe('data: first\n\n')
      else await text
      await up.closed
      await settled(proxied)
      expect(proxied.body.destroyed).toBe(true)
      expect(spy.seen).toEqual([])
    },
  )

  it.each(chains)(
    'the client leaves (%s): the upstream request is closed and nothing is thrown',
    async (_, through) => {
      const clock = new ManualClock()
      const { up, piped } = await proxy(clock, through)
      spy = uncaught()
      const leave = new AbortController()
      const answer = await request(`${server?.url}/events`, {
        headers: { 'x-deadline-remaining-ms': '1000' },
        dispatcher: agent,
        signal: leave.signal,
      })
      expect(answer.statusCode).toBe(200)
      const proxied = await piped
      // The first event reached the client: the pipe is running when it leaves.
      for await (const _chunk of answer.body) break
      leave.abort()
      await up.closed
      await settled(proxied)
      expect(proxied.body.destroyed).toBe(true)
      expect(spy.seen).toEqual([])
    },
  )
})
