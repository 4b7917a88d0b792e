import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { isClientClosed } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  deadlineErrors,
  expressChannels,
  type IngressClientClosedMessage,
  type IngressEndMessage,
} from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * A response the server cut without an error — the handler's `res.destroy()`,
 * or its connection destroyed on the server's side, as
 * `server.closeAllConnections()` and a `server.timeout` do — is not one the
 * client left: the client is still there, and sees its answer cut. It is
 * `error` (the server destroyed the response before it ended), with Node's
 * own word for such a stream, `ERR_STREAM_PREMATURE_CLOSE`; `client-closed`
 * needs evidence that the client left: its FIN or its reset on the socket.
 */
describe.each(majors)('a response the server destroyed without an error ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  /** An app whose one route waits, handing over its response and deadline signal. */
  const holdingApp = () => {
    const app = major.app()
    const held = deferred<{ res: import('express').Response; signal: AbortSignal }>()
    app.use(deadline({ defaultMs: 10_000 }))
    app.get('/', (req, res) => {
      held.resolve({ res, signal: req.deadline.signal })
    })
    return { app, held }
  }

  const watch = () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const left = record<IngressClientClosedMessage>(expressChannels.clientClosed.name)
    return {
      ended,
      left,
      stop() {
        ended.stop()
        left.stop()
      },
    }
  }

  const expectServerCut = (
    seen: ReturnType<typeof watch>,
    signal: AbortSignal,
  ): IngressEndMessage => {
    expect(seen.ended.messages.map((m) => m.outcome)).toEqual(['error'])
    expect(seen.left.messages).toEqual([])
    const end = seen.ended.messages[0]!
    expect(end.error).toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' })
    // Work still running for it stops, with that reason: not a ClientClosedError.
    expect(signal.aborted).toBe(true)
    expect(isClientClosed(signal.reason)).toBe(false)
    expect(signal.reason).toBe(end.error)
    return end
  }

  it('res.destroy() before anything was sent: error, not client-closed', async () => {
    const { app, held } = holdingApp()
    server = await listen(app)
    const seen = watch()
    try {
      const call = request(server.url, { dispatcher: agent })
      const { res, signal } = await held.promise
      res.destroy()
      // The client did not leave: it sees the connection cut under it.
      await expect(call).rejects.toThrow()
      await seen.ended.count(1)
      expectServerCut(seen, signal)
    } finally {
      seen.stop()
    }
  })

  it('res.destroy() mid-body: error, not client-closed; the client sees its answer cut short', async () => {
    const { app, held } = holdingApp()
    server = await listen(app)
    const seen = watch()
    try {
      const call = request(server.url, { dispatcher: agent })
      const { res, signal } = await held.promise
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('first part')
      const answer = await call
      expect(answer.statusCode).toBe(200)
      await once(answer.body, 'data')
      const cut = answer.body.text()
      res.destroy()
      await expect(cut).rejects.toThrow()
      await seen.ended.count(1)
      expect(expectServerCut(seen, signal).statusCode).toBe(200)
    } finally {
      seen.stop()
    }
  })

  it('its connection destroyed by the server (closeAllConnections, a server timeout): error, not client-closed', async () => {
    const { app, held } = holdingApp()
    server = await listen(app)
    const seen = watch()
    try {
      const call = request(server.url, { dispatcher: agent })
      const { signal } = await held.promise
      // What server.closeAllConnections() and a socket 'timeout' without a listener do.
      server.connections.at(-1)!.destroy()
      await expect(call).rejects.toThrow()
      await seen.ended.count(1)
      expectServerCut(seen, signal)
    } finally {
      seen.stop()
    }
  })

  it('deadlineErrors() swallows the work that cut stopped: the app’s error handler sees nothing', async () => {
    const app = major.app()
    const held = deferred<import('express').Response>()
    const passedOn: unknown[] = []
    const handled = deferred<void>()
    app.use(deadline({ defaultMs: 10_000 }))
    app.get('/', (req, res, next) => {
      // Work that stops when the request's deadline ends, and reports it as work does.
      const signal = req.deadline.signal
      signal.addEventListener('abort', () => {
        next(signal.reason)
        handled.resolve()
      })
      held.resolve(res)
    })
    app.use(deadlineErrors())
    app.use(
      (
        error: unknown,
        _req: import('express').Request,
        _res: import('express').Response,
        _next: import('express').NextFunction,
      ) => {
        passedOn.push(error)
      },
    )
    server = await listen(app)
    const call = request(server.url, { dispatcher: agent })
    const res = await held.promise
    res.destroy()
    await expect(call).rejects.toThrow()
    await handled.promise
    expect(passedOn).toEqual([])
  })

  // The evidence, both ways: a raw client, so nothing else touches the socket.
  const rawCall = async (url: string): Promise<Socket> => {
    const { port } = new URL(url)
    const socket = connect(Number(port), '127.0.0.1')
    await once(socket, 'connect')
    socket.on('error', () => {})
    socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n')
    return socket
  }

  it.each([
    ['its FIN (end)', (socket: Socket) => socket.end()],
    ['its reset (RST)', (socket: Socket) => socket.resetAndDestroy()],
  ])('still client-closed when the client leaves: %s', async (_how, leave) => {
    const { app, held } = holdingApp()
    server = await listen(app)
    const seen = watch()
    try {
      const socket = await rawCall(server.url)
      const { signal } = await held.promise
      leave(socket)
      await seen.ended.count(1)
      expect(seen.ended.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(seen.ended.messages[0]).not.toHaveProperty('error')
      expect(seen.left.messages).toHaveLength(1)
      expect(isClientClosed(signal.reason)).toBe(true)
    } finally {
      seen.stop()
    }
  })
})
