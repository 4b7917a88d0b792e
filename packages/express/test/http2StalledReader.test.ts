import { once } from 'node:events'
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import type { NextFunction, Request, Response } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, expressChannels, type IngressEndMessage } from '../src/index.js'
import { deferred, record } from './support/servers.js'

/**
 * A stream whose client stopped reading, over HTTP/2's compat API: its flow
 * control window is spent and the response's last write waits for room.
 * Over HTTP/1 the deadline destroys such a response (an end could never be
 * flushed); HTTP/2's compat response has no `writableNeedDrain` of its own
 * (its stream has), so it was ended instead: the end waited for room that
 * never came, the stream stayed open with its buffers, and the request
 * never ended — no end event, its listeners kept, for as long as the
 * session lived.
 */
describe('deadline() on HTTP/2, a stream whose client stopped reading', () => {
  let close: (() => void) | undefined
  afterEach(() => {
    close?.()
    close = undefined
  })

  it('is destroyed at the deadline, and the request ends expired', async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const middleware = deadline({ defaultMs: 1000, reserveMs: 10, clock })
      const full = deferred<http2.Http2ServerResponse>()
      const server = http2.createServer((req, res) => {
        const next = (() => {
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          const chunk = Buffer.alloc(64 * 1024, 'a')
          while (res.write(chunk)) {}
          full.resolve(res)
        }) as NextFunction
        middleware(req as unknown as Request, res as unknown as Response, next)
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
      close = () => {
        session.destroy()
        server.close()
      }
      const stream = session.request({ ':path': '/events' })
      stream.pause()
      stream.on('error', () => {})
      const res = await full.promise
      expect(res.stream.writableNeedDrain).toBe(true)
      clock.advance(990)
      expect(res.stream.destroyed).toBe(true)
      await ended.count(1)
      expect(ended.messages.map((m) => m.outcome)).toEqual(['expired'])
    } finally {
      ended.stop()
    }
  })
})
