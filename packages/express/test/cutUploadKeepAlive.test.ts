import { IncomingMessage } from 'node:http'
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { deferred, listen, majors, type Running } from './support/servers.js'
import { untilSent } from './support/untilSent.js'

/**
 * Uploads cut by the 504 on one keep-alive connection (review of the two
 * fixes that end such a read): Node 24's `req.signal` ("aborted when the
 * underlying socket closes or the request is destroyed") must still abort
 * when the request is destroyed after the 504 — the first fix copied Node
 * 20's destroy, which has no signal to abort — and a reader that stops
 * partway must not leave one 'close' listener per request on the connection.
 */

function open(server: Running): Socket {
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
  socket.setEncoding('latin1')
  socket.on('error', () => {})
  return socket
}

const head = (ms: number) =>
  `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\nx-deadline-remaining-ms: ${ms}\r\n\r\n{"a":"`

const hasSignal = 'signal' in IncomingMessage.prototype

describe.each(majors)('uploads cut by the 504 on a keep-alive connection ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function signalAfter(how: 'handler-destroys' | 'client-leaves') {
    const closed = deferred<{ aborted: boolean }>()
    const app = major.app()
    app.use(deadline({ reserveMs: 0 }))
    app.post(
      '/upload',
      major.route(async (req, res) => {
        // Taken early, as Node's docs show it handed to a fetch.
        const signal = (req as unknown as { signal: AbortSignal }).signal
        req.on('error', () => {})
        req.on('data', () => {})
        req.on('close', () => closed.resolve({ aborted: signal.aborted }))
        if (how === 'handler-destroys') res.on('finish', () => req.destroy())
        await new Promise(() => {})
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    const socket = open(server)
    socket.write(head(50))
    await untilSent(socket, 'deadline_exceeded')
    if (how === 'client-leaves') socket.destroy()
    const result = await closed.promise
    socket.destroy()
    return result
  }

  it.skipIf(!hasSignal)(
    'req.signal aborts when the handler destroys the request after the 504',
    async () => {
      expect(await signalAfter('handler-destroys')).toEqual({ aborted: true })
    },
  )

  it.skipIf(!hasSignal)(
    'req.signal aborts when the client leaves mid-upload after the 504',
    async () => {
      expect(await signalAfter('client-leaves')).toEqual({ aborted: true })
    },
  )

  it("an 'aborted' listener of a request destroyed after the 504 still reads req.ip", async () => {
    const seen = deferred<unknown[]>()
    const app = major.app()
    app.use(deadline({ reserveMs: 0 }))
    app.post(
      '/upload',
      major.route(async (req, res) => {
        const read: unknown[] = []
        req.on('error', () => {})
        req.on('data', () => {})
        // A log line for the cut upload, as a handler writes one.
        req.on('aborted', () => read.push(req.ip))
        req.on('close', () => seen.resolve(read))
        res.on('finish', () => req.destroy())
        await new Promise(() => {})
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    const socket = open(server)
    socket.write(head(50))
    await untilSent(socket, 'deadline_exceeded')
    // Before: req.socket was null inside Node's destroy, and req.ip threw.
    expect(await seen.promise).toEqual([expect.stringMatching(/127\.0\.0\.1$/)])
    socket.destroy()
  })

  it('a reader that stops partway leaves no listener per cut upload on the connection', async () => {
    const app = major.app()
    app.use(deadline({ reserveMs: 0 }))
    app.post(
      '/upload',
      major.route(async (req, res) => {
        // A sniffer: one chunk read, the stream left paused, never read to its end.
        await new Promise((resolve) => req.once('data', resolve))
        req.pause()
        await new Promise(() => {})
        res.end()
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`)
    process.on('warning', onWarning)
    try {
      const socket = open(server)
      const counts: number[] = []
      for (let i = 0; i < 12; i++) {
        const answered = untilSent(socket, 'deadline_exceeded')
        socket.write(head(30))
        await answered
        socket.write(`${'b'.repeat(192)}"}`)
        counts.push(server.connections[0]!.listenerCount('close'))
      }
      socket.destroy()
      expect(counts).toEqual(counts.map(() => counts[0]))
      expect(warnings).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })
})
