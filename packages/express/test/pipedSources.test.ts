import { once } from 'node:events'
import { createReadStream, type ReadStream } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { connect } from 'node:net'
import { PassThrough, Readable, Writable } from 'node:stream'
import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, expressChannels, type IngressEndMessage } from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * A plain `src.pipe(res)` running when the response is over early: Node
 * unpipes and pauses the source and leaves it open (a file stream keeps its
 * descriptor, an upstream body its socket), read for nobody. `pipeline()`
 * destroys it; a plain pipe has to be stopped by the ingress.
 */

/** A source that produces only what the test pushes: an upstream body arriving slowly. */
function slowSource() {
  const source = new Readable({ read() {} })
  // A plain listener: `events.once` would listen for 'error' as well.
  const closed = new Promise<'closed'>((resolve) => source.once('close', () => resolve('closed')))
  return { source, closed }
}

/**
 * Resolves once the response is over on the server, and one more turn of the
 * event loop has run (what Node does on the response's 'close' — the unpipe —
 * and the source's own 'close', emitted on the next tick, are done then).
 */
async function over(res: ServerResponse): Promise<void> {
  if (!res.closed) await once(res, 'close')
  await new Promise((resolve) => setImmediate(resolve))
}

describe.each(majors)('a source piped into the response ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is destroyed when the deadline ends a response it started: not left open, paused, for nobody', async () => {
    const clock = new ManualClock()
    const app = major.app()
    const piped = deferred<{ res: ServerResponse } & ReturnType<typeof slowSource>>()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.get('/', (_req, res) => {
      const slow = slowSource()
      slow.source.pipe(res)
      slow.source.push('first part')
      piped.resolve({ ...slow, res })
    })
    server = await listen(app)
    const answer = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    const { source, closed, res } = await piped.promise
    expect(answer.statusCode).toBe(200)
    const body = answer.body.text()
    clock.advance(1000)
    expect(await body).toBe('first part')
    await over(res)
    expect(source.destroyed).toBe(true)
    expect(await closed).toBe('closed')
  })

  it('is destroyed when the deadline destroys a response it cut short (a declared Content-Length)', async () => {
    const clock = new ManualClock()
    const app = major.app()
    const piped = deferred<{ res: ServerResponse } & ReturnType<typeof slowSource>>()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.get('/', (_req, res) => {
      res.setHeader('content-length', '100')
      const slow = slowSource()
      slow.source.pipe(res)
      slow.source.push('first part')
      piped.resolve({ ...slow, res })
    })
    server = await listen(app)
    const answer = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    const { source, closed, res } = await piped.promise
    const body = answer.body.text()
    body.catch(() => {})
    clock.advance(1000)
    await expect(body).rejects.toThrow()
    await over(res)
    expect(source.destroyed).toBe(true)
    expect(await closed).toBe('closed')
  })

  it('is destroyed when the deadline answers 504 before it produced anything: a file stream closes its descriptor', async () => {
    const clock = new ManualClock()
    const app = major.app()
    const piped = deferred<{ res: ServerResponse; upstream: Readable; file: ReadStream }>()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.get('/', (_req, res) => {
      // An upstream that has not answered yet, and a file still being opened.
      const upstream = new Readable({ read() {} })
      upstream.pipe(res)
      const file = createReadStream(import.meta.filename)
      file.pipe(res)
      piped.resolve({ res, upstream, file })
      // The deadline runs out now: nothing has reached the response.
      clock.advance(1000)
    })
    server = await listen(app)
    const answer = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    expect(answer.statusCode).toBe(504)
    await answer.body.dump()
    const { res, upstream, file } = await piped.promise
    await over(res)
    expect(upstream.destroyed).toBe(true)
    expect(file.destroyed).toBe(true)
    if (!file.closed) await once(file, 'close')
    expect(file.closed).toBe(true)
  })

  it('is destroyed when the client hangs up, and the request is reported client-closed', async () => {
    const app = major.app()
    const piped = deferred<{ res: ServerResponse } & ReturnType<typeof slowSource>>()
    app.use(deadline({ defaultMs: 10_000 }))
    app.get('/', (_req, res) => {
      const slow = slowSource()
      slow.source.pipe(res)
      slow.source.push('first part')
      piped.resolve({ ...slow, res })
    })
    server = await listen(app)
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const caller = new AbortController()
      const answer = await request(server.url, { signal: caller.signal, dispatcher: agent })
      const { source, closed, res } = await piped.promise
      const first = once(answer.body, 'data')
      await first
      caller.abort()
      await over(res)
      expect(source.destroyed).toBe(true)
      expect(await closed).toBe('closed')
      expect(ended.messages.map((m) => m.outcome)).toEqual(['client-closed'])
    } finally {
      ended.stop()
    }
  })

  it('piped in after the client left is unpiped and destroyed at once, not read for nobody', async () => {
    const app = major.app()
    const piped = deferred<{ res: ServerResponse } & ReturnType<typeof slowSource>>()
    app.use(deadline({ defaultMs: 10_000 }))
    app.get('/', (_req, res) => {
      res.write('first part')
      // The handler pipes its upstream only once the caller is gone.
      res.once('close', () => {
        const slow = slowSource()
        slow.source.pipe(res)
        piped.resolve({ ...slow, res })
      })
    })
    server = await listen(app)
    const caller = new AbortController()
    const answer = await request(server.url, { signal: caller.signal, dispatcher: agent })
    await once(answer.body, 'data')
    caller.abort()
    const { source, closed } = await piped.promise
    expect(source.destroyed).toBe(true)
    expect(await closed).toBe('closed')
  })

  it("the request's own body, still arriving when the deadline ends the echo it was piped into, drains: the connection serves the next request", async () => {
    const clock = new ManualClock()
    const app = major.app()
    const drained = deferred<'drained'>()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.post('/echo', (req, res) => {
      res.setHeader('content-type', 'text/plain')
      req.pipe(res)
      req.once('end', () => drained.resolve('drained'))
    })
    app.get('/next', (_req, res) => {
      res.json({ next: true })
    })
    server = await listen(app)
    // A raw connection: what it sends is exactly what the server reads, in order.
    const rest = Buffer.alloc(1024 * 1024, 'b') // far more than the request's buffers hold
    const { port } = new URL(server.url)
    const socket = connect(Number(port), '127.0.0.1')
    let received = ''
    const seen = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!received.includes(text)) return
          socket.off('data', check)
          resolve()
        }
        socket.on('data', check)
        check()
      })
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
    })
    try {
      socket.write(
        'POST /echo HTTP/1.1\r\nhost: x\r\nx-deadline-remaining-ms: 1000\r\n' +
          `content-length: ${'first part'.length + rest.length}\r\n\r\nfirst part`,
      )
      await seen('first part')
      clock.advance(1000)
      await seen('0\r\nx-deadline-expired: 1\r\n\r\n') // the echo ended (chunked)
      // The rest of the upload, then the next request on the same connection.
      socket.write(rest)
      socket.write('GET /next HTTP/1.1\r\nhost: x\r\n\r\n')
      expect(await drained.promise).toBe('drained')
      await seen('{"next":true}')
      expect(received).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*first part[\s\S]*HTTP\/1\.1 200 OK/)
      expect(server.connections).toHaveLength(1)
    } finally {
      socket.destroy()
    }
  })

  it('also piped to another writable keeps flowing to it after the deadline ended this response', async () => {
    const clock = new ManualClock()
    const app = major.app()
    const hub = new PassThrough()
    const copied: string[] = []
    const copy = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        copied.push(chunk.toString())
        callback()
      },
    })
    hub.pipe(copy)
    const piped = deferred<ServerResponse>()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.get('/', (_req, res) => {
      hub.pipe(res)
      hub.write('both ')
      piped.resolve(res)
    })
    server = await listen(app)
    const answer = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    const res = await piped.promise
    const body = answer.body.text()
    clock.advance(1000)
    expect(await body).toBe('both ')
    await over(res)
    expect(hub.destroyed).toBe(false)
    const more = once(copy, 'finish')
    hub.end('and the copy only')
    await more
    expect(copied.join('')).toBe('both and the copy only')
  })
})
