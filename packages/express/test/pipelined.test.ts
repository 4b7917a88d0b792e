import { once } from 'node:events'
import { connect } from 'node:net'
import { isClientClosed } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressClientClosedMessage, type IngressEndMessage } from '../src/index.js'
import { aborted, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * HTTP/1.1 pipelining: a client writes several requests before it reads an
 * answer. Node runs every handler at once, but only the answer at the head
 * of the queue has the socket, and only it is told when the connection dies.
 * A client that pipelines and leaves must not go on paying for the rest.
 */
describe.each(majors)('pipelined requests whose client leaves ($name)', (major) => {
  const running: Running[] = []
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.close()))
  })

  it('cancels every queued request’s deadline, not only the one being answered, and ends each client-closed', async () => {
    const COUNT = 4
    const stopped: unknown[] = []
    let arrived = 0
    const allArrived = deferred()
    const allStopped = deferred()
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const app = major.app()
    app.use(deadline({ defaultMs: 30_000 }))
    app.get(
      '/',
      major.route(async (req) => {
        if (++arrived === COUNT) allArrived.resolve()
        // Work that only the deadline can stop: a client that left must end it.
        const work = aborted(req.deadline.signal)
        await work
        stopped.push(req.deadline.signal.reason)
        if (stopped.length === COUNT) allStopped.resolve()
      }),
    )
    const server = await listen(app)
    running.push(server)
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(COUNT))
    await allArrived.promise
    socket.destroy()
    // Broken, the three queued handlers wait out their 30 s budget: the
    // test's own timeout fails it.
    await allStopped.promise
    expect(stopped).toHaveLength(COUNT)
    expect(stopped.every(isClientClosed), 'every deadline cancelled as client-closed').toBe(true)
    await ends.count(COUNT)
    expect(ends.messages.map((m) => m.outcome)).toEqual(
      Array.from({ length: COUNT }, () => 'client-closed'),
    )
    ends.stop()
  })

  it('a connection gone while a middleware ahead of deadline() awaited: each queued request still ends client-closed, once', async () => {
    const COUNT = 2
    let waiting = 0
    const allWaiting = deferred()
    const gate = deferred()
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const left = record<IngressClientClosedMessage>('hourglass:ingress:client-closed')
    const app = major.app()
    // An auth or rate-limit lookup ahead of deadline(): the client leaves during it.
    app.use((_req, _res, next) => {
      if (++waiting === COUNT) allWaiting.resolve()
      void gate.promise.then(() => next())
    })
    app.use(deadline({ defaultMs: 30_000 }))
    app.get(
      '/',
      major.route(async (req) => {
        await aborted(req.deadline.signal)
      }),
    )
    const server = await listen(app)
    running.push(server)
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(COUNT))
    await allWaiting.promise
    const serverSide = server.connections[0]!
    const gone = once(serverSide, 'close')
    socket.destroy()
    await gone
    gate.resolve()
    // Broken, the queued one ran its 30 s budget for nobody and never ended.
    await ends.count(COUNT)
    expect(ends.messages.map((m) => m.outcome)).toEqual(['client-closed', 'client-closed'])
    expect(left.messages, 'one client-closed event per request').toHaveLength(COUNT)
    ends.stop()
    left.stop()
  })
})
