import { once } from 'node:events'
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import { gunzipSync } from 'node:zlib'
import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import {
  deadline,
  expressChannels,
  type IngressEndMessage,
  type IngressExpireMessage,
} from '../src/index.js'
import { gzipAhead } from './support/gzipAhead.js'
import { useServer } from './support/oneServer.js'
import { deferred, listen, majors, record } from './support/servers.js'

/**
 * `compression()` mounted ahead of `deadline()` (`gzipAhead`, its
 * mechanism): the handler's `res.json()` hands the body to zlib, and Node's
 * `end` is called only once the compressed bytes have been written, which
 * for a client reading slowly waits for the socket to drain. The deadline
 * that fell in that wait took the answer for a started stream: reported it
 * `expired` (action `ended`), and destroyed it a second later — measured
 * with compression 1.8: a 32 MB JSON answered at once under a 300 ms
 * budget, its client cut after 5.4 MB ("aborted"), where without
 * compression the whole answer arrived. The handler ended it in time: it
 * goes out whole, as an uncompressed answer does, and the request ends `ok`
 * — while its bytes move. One whose bytes stop (a session store that never
 * answers, a client that stopped reading) is cut after a grace without a
 * byte sent, not kept for ever: before, it held its socket with no event.
 */
describe.each(majors)('an answer ended in time behind compression ($name)', (major) => {
  const served = useServer()

  it('goes out whole when its end completes after the deadline: not cut, not expired', async () => {
    const clock = new ManualClock()
    const firstPart = deferred()
    const drained = deferred()
    const answered = deferred()
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const expired = record<IngressExpireMessage>(expressChannels.expire.name)
    try {
      const app = major.app()
      app.use(gzipAhead(drained.promise, firstPart.promise))
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      const rows = Array.from({ length: 100 }, (_, i) => `row ${i}`)
      app.get('/', (_req, res) => {
        res.json({ rows })
        answered.resolve()
      })
      const { pending } = await served.send(app)
      await answered.promise
      clock.advance(990) // the deadline, the compressed body still waiting to drain
      firstPart.resolve()
      const res = await pending // its head and first bytes have come
      clock.advance(1000) // a grace, bytes sent during it: kept
      drained.resolve()
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-encoding']).toBe('gzip')
      const body = Buffer.from(await res.body.arrayBuffer())
      expect(JSON.parse(gunzipSync(body).toString())).toEqual({ rows })
      await ended.count(1)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['ok', 200]])
      expect(expired.messages).toEqual([])
    } finally {
      ended.stop()
      expired.stop()
    }
  })

  it('is cut once a grace passes without a byte sent (its end never completes): not held for ever', async () => {
    const clock = new ManualClock()
    const answered = deferred()
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const expired = record<IngressExpireMessage>(expressChannels.expire.name)
    try {
      const app = major.app()
      // A store that never answers: the output never leaves.
      app.use(gzipAhead(new Promise(() => {})))
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      app.get('/', (_req, res) => {
        res.json({ ok: true })
        answered.resolve()
      })
      const { pending } = await served.send(app)
      await answered.promise
      clock.advance(990) // the deadline: the answer is the handler's, kept
      expect(ended.messages).toEqual([])
      expect(expired.messages).toEqual([])
      clock.advance(1000) // a grace without a byte sent
      await expect(pending).rejects.toThrow()
      await ended.count(1)
      expect(ended.messages.map((m) => m.outcome)).toEqual(['expired'])
      expect(expired.messages.map((m) => [m.stage, m.action])).toEqual([['handler', 'ended']])
    } finally {
      ended.stop()
      expired.stop()
    }
  })

  it('queued behind another pipelined answer (no socket yet, so no byte sent): kept, not cut with the shared connection', async () => {
    const clock = new ManualClock()
    const slowDone = deferred()
    const drained = deferred()
    const answered = deferred()
    const app = major.app()
    // Ahead of everything: the first answer, slow, outside any deadline.
    app.get('/slow', async (_req, res) => {
      await slowDone.promise
      res.end('slow')
    })
    app.use(gzipAhead(drained.promise))
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
    app.get('/big', (_req, res) => {
      res.json({ big: true })
      answered.resolve()
    })
    const server = await listen(app)
    try {
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
      let received = ''
      socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk))
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
      socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /big HTTP/1.1\r\nHost: x\r\n\r\n')
      await answered.promise
      clock.advance(990) // the deadline, /big ended through gzip and queued behind /slow
      clock.advance(1000) // a grace: queued, it has sent nothing, and is no stall
      slowDone.resolve()
      drained.resolve()
      await expect.poll(() => received.endsWith('0\r\n\r\n')).toBe(true)
      socket.end()
      await closed
      expect(received.match(/HTTP\/1\.1 200/g)).toHaveLength(2)
    } finally {
      await server.close()
    }
  })
})

describe('an answer ended in time behind a middleware ahead, over HTTP/2', () => {
  it('is cut once its own stream stalls for a grace, though a sibling stream moves the connection', async () => {
    const clock = new ManualClock()
    const blocked = deferred()
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const mw = deadline({ defaultMs: 300, reserveMs: 10, clock })
    let sibling: http2.Http2ServerResponse | undefined
    const siblingCame = deferred()
    const server = http2.createServer((req, res) => {
      if (req.url === '/sibling') {
        sibling = res
        res.write('y')
        siblingCame.resolve()
        return
      }
      // A middleware ahead: its end writes a large body as backpressure allows, then Node's.
      const end = res.end.bind(res)
      ;(res as unknown as { end: () => unknown }).end = () => {
        const body = Buffer.alloc(512 * 1024, 'a')
        let at = 0
        const pump = (): void => {
          while (at < body.length) {
            const room = res.write(body.subarray(at, at + 16_384))
            at += 16_384
            if (!room) {
              res.once('drain', pump)
              blocked.resolve()
              return
            }
          }
          end()
        }
        pump()
        return res
      }
      mw(req as never, res as never, (() => res.end()) as never)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    session.on('error', () => {})
    try {
      const stalled = session.request({ ':path': '/stalled' })
      stalled.pause() // a client that stopped reading this stream
      stalled.on('error', () => {})
      const other = session.request({ ':path': '/sibling' })
      other.on('error', () => {})
      let received = 0
      other.on('data', (chunk: Buffer) => (received += chunk.length))
      await Promise.all([blocked.promise, siblingCame.promise])
      clock.advance(290) // the deadline: the answer is the handler's, kept while it moves
      // The sibling moves the session's socket in every grace; the stalled
      // stream does not (its first grace may still see what the window let
      // out). Judged by the session's socket, it was kept while a sibling moved.
      for (let grace = 1; grace <= 3; grace++) {
        sibling?.write('y'.repeat(1000))
        await expect.poll(() => received).toBeGreaterThan(1000 * grace)
        clock.advance(1000)
      }
      // The server's end of it: cut, the request ended `expired`.
      await ended.count(1)
      expect(ended.messages.map((m) => m.outcome)).toEqual(['expired'])
    } finally {
      ended.stop()
      session.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
