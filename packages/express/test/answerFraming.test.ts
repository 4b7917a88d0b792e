import { once } from 'node:events'
import { type AddressInfo, connect, type Socket } from 'node:net'
import { gunzipSync } from 'node:zlib'
import { ManualClock } from '@hourglass/core'
import type { Express } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { gzipAhead } from './support/gzipAhead.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * The answer to an expired request is framed, and its keep-alive connection
 * kept. Clearing the handler's body headers went through Node's
 * `removeHeader('transfer-encoding')` (and `'content-length'` before
 * `respond`), which Node takes for the app's wish for neither, for whatever
 * body comes next: an answer that sets no length itself — `respond`'s
 * `res.end(body)`, or a 504 that `compression()` ahead gzips (it removes the
 * length; `gzipAhead` does as it does) — went out with neither a length nor
 * chunked framing, read to the close under `Connection: keep-alive`, and
 * every 504 cost its connection.
 */
describe.each(majors)('the answer to an expired request is framed ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  /** Two requests on one keep-alive connection: the first runs out of time, the second is answered. */
  async function twoOnOneConnection(app: Express, clock: ManualClock, entered: Promise<void>) {
    app.get('/next', (_req, res) => {
      res.json({ next: true })
    })
    server = await listen(app)
    const agent = client({ connections: 1 })
    const answer = request(server.url, {
      dispatcher: agent,
      // The caller's budget (the defaultMs's size): its 504 says it is gone.
      headers: { 'accept-encoding': 'gzip', 'x-deadline-remaining-ms': '1000' },
    })
    await entered
    clock.advance(990)
    const res = await answer
    const body = Buffer.from(await res.body.arrayBuffer())
    const next = await request(`${server.url}/next`, { dispatcher: agent })
    const nextBody = Buffer.from(await next.body.arrayBuffer())
    expect(JSON.parse(decoded(next.headers['content-encoding'], nextBody))).toEqual({ next: true })
    return { res, body, connections: server.connections.length }
  }

  it("respond's res.end(body) gets its Content-Length, the connection kept", async () => {
    const clock = new ManualClock()
    const entered = deferred()
    const app = major.app()
    app.use(
      deadline({
        defaultMs: 1000,
        reserveMs: 10,
        clock,
        respond: (_req, res) => {
          res.statusCode = 504
          res.end('{"error":"timeout"}')
        },
      }),
    )
    app.get('/', () => entered.resolve())
    const { res, body, connections } = await twoOnOneConnection(app, clock, entered.promise)
    expect(res.statusCode).toBe(504)
    expect(res.headers['content-length']).toBe('19')
    expect(body.toString()).toBe('{"error":"timeout"}')
    expect(connections).toBe(1)
  })

  it('the plain 504 gzipped by a compression() ahead goes out chunked, the connection kept', async () => {
    const clock = new ManualClock()
    const entered = deferred()
    const app = major.app()
    app.use(gzipAhead(Promise.resolve()))
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
    app.get('/', () => entered.resolve())
    const { res, body, connections } = await twoOnOneConnection(app, clock, entered.promise)
    expect(res.statusCode).toBe(504)
    expect(res.headers['x-deadline-expired']).toBe('1')
    expect(res.headers['transfer-encoding']).toBe('chunked')
    expect(JSON.parse(decoded(res.headers['content-encoding'], body))).toMatchObject({
      error: 'deadline_exceeded',
    })
    expect(connections).toBe(1)
  })

  it('so does it when the handler had removed Transfer-Encoding itself (a proxy stripping hop-by-hop fields): its wish was for its own body', async () => {
    const clock = new ManualClock()
    const entered = deferred()
    const app = major.app()
    app.use(gzipAhead(Promise.resolve()))
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
    app.get('/', (_req, res) => {
      res.removeHeader('transfer-encoding')
      entered.resolve()
    })
    const { res, connections } = await twoOnOneConnection(app, clock, entered.promise)
    expect(res.statusCode).toBe(504)
    expect(res.headers['transfer-encoding']).toBe('chunked')
    expect(connections).toBe(1)
  })

  it('and when it had written its head with neither a length nor chunks, not sent yet: the 504 in its place keeps the connection it says it keeps', async () => {
    const clock = new ManualClock()
    const entered = deferred()
    const app = major.app()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
    app.get('/', (_req, res) => {
      // A proxy route: hop-by-hop fields stripped, the upstream's head
      // written, its body still to come. Node marked the connection to
      // close after a body so framed (read to the close).
      res.removeHeader('content-length')
      res.removeHeader('transfer-encoding')
      res.writeHead(200, { 'content-type': 'text/plain' })
      entered.resolve()
    })
    const { res, body, connections } = await twoOnOneConnection(app, clock, entered.promise)
    expect(res.statusCode).toBe(504)
    expect(res.headers.connection).toBe('keep-alive')
    expect(JSON.parse(body.toString())).toMatchObject({ error: 'deadline_exceeded' })
    // Before, Node closed it after the 504 all the same: /next took a new one.
    expect(connections).toBe(1)
  })

  /**
   * A route whose head is written with neither a length nor chunks, not
   * sent yet, on a server that answers what a client sent before its FIN
   * (`httpAllowHalfOpen`); the client sends `requests` on one connection,
   * half-closes, and the deadline then runs out. What came back, and the
   * server's end of the connection.
   */
  async function halfClosedAfter(requests: string[]) {
    const clock = new ManualClock()
    const entered = deferred()
    const app = major.app()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
    app.get('/', (_req, res) => {
      res.removeHeader('content-length')
      res.removeHeader('transfer-encoding')
      res.writeHead(200, { 'content-type': 'text/plain' })
      entered.resolve()
    })
    app.get('/next', (_req, res) => {
      res.json({ next: true })
    })
    const { createServer } = await import('node:http')
    const http = createServer(app)
    // Node's switch for answering what a client sent before its FIN (off: it aborts them).
    ;(http as unknown as { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true
    // Kept a minute if Node's close mark were lost: a close comes from it alone.
    http.keepAliveTimeout = 60_000
    http.listen(0, '127.0.0.1')
    await once(http, 'listening')
    const accepted: Socket[] = []
    http.on('connection', (s: Socket) => accepted.push(s))
    closeHalfOpen = () => {
      http.closeAllConnections()
      http.close()
    }
    const socket = connect((http.address() as AddressInfo).port, '127.0.0.1')
    let text = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
    })
    await once(socket, 'connect')
    socket.write(requests.map((path) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''))
    await entered.promise
    socket.end()
    // The server has read the FIN before the deadline ends.
    await expect.poll(() => accepted[0]?.readableEnded).toBe(true)
    clock.advance(990)
    await expect
      .poll(() => accepted[0]?.destroyed, { message: 'the server ended the connection' })
      .toBe(true)
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1])
    return { statuses, text }
  }
  let closeHalfOpen: (() => void) | undefined
  afterEach(() => {
    closeHalfOpen?.()
    closeHalfOpen = undefined
  })

  it('so it does for a client that pipelined the next request and then half-closed its side: that one is answered, then the connection ends', async () => {
    const { statuses, text } = await halfClosedAfter(['/', '/next'])
    // Before: only the 504 (saying keep-alive), the connection closed after it.
    expect(statuses).toEqual(['504', '200'])
    expect(text).toContain('{"next":true}')
  })

  it('but when the expired request was the last the half-closed client sent, the connection ends after its 504, as Node ends it', async () => {
    const { statuses } = await halfClosedAfter(['/'])
    expect(statuses).toEqual(['504'])
  })
})

function decoded(coding: unknown, body: Buffer): string {
  return (coding === 'gzip' ? gunzipSync(body) : body).toString()
}
