import { once } from 'node:events'
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import { isClientClosed } from '@hourglass/core'
import type { NextFunction, Request, Response } from 'express'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type DeadlineMiddlewareOptions, deadline, type IngressEndMessage } from '../src/index.js'
import { deferred, record } from './support/servers.js'

/**
 * The middleware on Node's HTTP/2 compat API (Express itself does not run
 * there). Its response emits 'finish' for a stream that closed, ended or
 * not: a client's RST_STREAM must not read as an answer finished in time.
 */
describe('deadline() on an HTTP/2 compat server', () => {
  let close: (() => void) | undefined
  afterEach(() => {
    close?.()
    close = undefined
  })

  async function serve(
    handler: (req: Request, res: Response) => void,
    options: DeadlineMiddlewareOptions = {},
    ahead?: (res: http2.Http2ServerResponse) => Promise<void>,
  ) {
    const middleware = deadline({ defaultMs: 10_000, reserveMs: 10, ...options })
    return listen(async (req, res) => {
      await ahead?.(res) // a middleware ahead of deadline(), awaiting something
      const next = (() =>
        handler(req as unknown as Request, res as unknown as Response)) as NextFunction
      middleware(req as unknown as Request, res as unknown as Response, next)
    })
  }

  /** An HTTP/2 server on loopback and a session to it, both closed after the test. */
  async function listen(
    onRequest: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  ) {
    const server = http2.createServer(onRequest)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    close = () => {
      session.destroy()
      server.close()
    }
    return session
  }

  it('a stream the client cancels ends client-closed, and its deadline is cancelled for the work in flight', async () => {
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const started = deferred<Request>()
    try {
      const session = await serve((req) => started.resolve(req))
      const stream = session.request({ ':path': '/slow' })
      stream.on('error', () => {})
      const req = await started.promise
      stream.close(http2.constants.NGHTTP2_CANCEL)
      await ends.count(1)
      expect(ends.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(req.deadline.signal.aborted).toBe(true)
      expect(isClientClosed(req.deadline.reason)).toBe(true)
    } finally {
      ends.stop()
    }
  })

  it('a stream the client cancelled while a middleware ahead of deadline() worked: deadline() ends it client-closed, its deadline cancelled', async () => {
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const middleware = deadline({ defaultMs: 10_000, reserveMs: 10 })
    const thrown: unknown[] = []
    let ran = false
    let entered: Request | undefined
    const arrived = deferred()
    try {
      const session = await listen(async (req, res) => {
        arrived.resolve()
        await once(res, 'close') // the middleware ahead, awaiting while the client leaves
        try {
          middleware(
            req as unknown as Request,
            res as unknown as Response,
            (() => {
              ran = true
              entered = req as unknown as Request
            }) as NextFunction,
          )
        } catch (error) {
          thrown.push(error)
        }
      })
      const stream = session.request({ ':path': '/' })
      stream.on('error', () => {})
      await arrived.promise
      stream.close(http2.constants.NGHTTP2_CANCEL)
      await vi.waitFor(
        () => expect(thrown.length > 0 || ends.messages.length > 0 || ran).toBe(true),
        { timeout: 10_000 },
      )
      // Its closed stream's `socket` is undefined: read, it threw a TypeError.
      expect(thrown).toEqual([])
      // And the response has no `destroyed`: the client's departure went
      // unseen, no end published, the handler's deadline live for nobody. It
      // runs as on HTTP/1, as if the client had left a moment later.
      await ends.count(1)
      expect(ends.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(ran).toBe(true)
      expect(isClientClosed(entered?.deadline.reason)).toBe(true)
    } finally {
      ends.stop()
    }
  })

  it('a stream answered in full still ends ok', async () => {
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    try {
      const session = await serve((_req, res) => {
        res.end('done')
      })
      const stream = session.request({ ':path': '/' })
      stream.setEncoding('utf8')
      let body = ''
      stream.on('data', (chunk: string) => {
        body += chunk
      })
      await once(stream, 'end')
      await ends.count(1)
      expect(body).toBe('done')
      expect(ends.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['ok', 200]])
    } finally {
      ends.stop()
    }
  })

  it('strict, a malformed header, the client gone while a middleware ahead worked: client-closed, as on HTTP/1, not refused', async () => {
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const arrived = deferred()
    try {
      const session = await serve(
        () => {},
        { strict: true },
        async (res) => {
          arrived.resolve()
          await once(res, 'close')
        },
      )
      const stream = session.request({ ':path': '/', 'x-deadline-remaining-ms': 'soon' })
      stream.on('error', () => {})
      await arrived.promise
      stream.close(http2.constants.NGHTTP2_CANCEL)
      await ends.count(1)
      expect(ends.messages.map((m) => m.outcome)).toEqual(['client-closed'])
    } finally {
      ends.stop()
    }
  })

  it.each([
    {
      where: 'by a middleware ahead, before deadline() ran',
      ahead: async (res: http2.Http2ServerResponse) => {
        res.stream.destroy(new Error('upstream source failed'))
        await once(res, 'close')
      },
      handler: () => {},
    },
    {
      where: 'by the handler',
      ahead: undefined,
      handler: (_req: Request, res: Response) => {
        res.destroy(new Error('upstream source failed'))
      },
    },
  ])(
    'a response the server destroyed with an error ($where) ends error, not client-closed',
    async ({ ahead, handler }) => {
      const ends = record<IngressEndMessage>('hourglass:ingress:end')
      try {
        const session = await serve(handler, {}, ahead)
        const stream = session.request({ ':path': '/' })
        stream.on('error', () => {})
        await ends.count(1)
        // HTTP/2's compat response has no `errored`: its stream's was not read.
        expect(
          ends.messages.map((m) => [m.outcome, (m.error as Error | undefined)?.message]),
        ).toEqual([['error', 'upstream source failed']])
      } finally {
        ends.stop()
      }
    },
  )

  it.each([
    [
      'its session destroyed with an error (a GOAWAY INTERNAL_ERROR)',
      (session: http2.ClientHttp2Session) => session.destroy(new Error('client crashed')),
    ],
    [
      'a GOAWAY with an error code',
      (session: http2.ClientHttp2Session) =>
        session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM),
    ],
  ])(
    'a client that leaves the whole session, %s, ends client-closed (Node destroys its streams with ERR_HTTP2_SESSION_ERROR)',
    async (_, leave) => {
      const ends = record<IngressEndMessage>('hourglass:ingress:end')
      const started = deferred<Request>()
      try {
        const session = await serve((req) => started.resolve(req))
        session.on('error', () => {})
        const stream = session.request({ ':path': '/' })
        stream.on('error', () => {})
        const req = await started.promise
        leave(session)
        await ends.count(1)
        expect(ends.messages.map((m) => [m.outcome, m.error])).toEqual([
          ['client-closed', undefined],
        ])
        expect(isClientClosed(req.deadline.reason)).toBe(true)
      } finally {
        ends.stop()
      }
    },
  )
})
