import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { type AddressInfo, connect, type Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'

/**
 * Node bounds the time to receive a whole request (`server.requestTimeout`)
 * only until its response is sent. A 504 written while the body is still
 * arriving lifted that bound: the rest of the upload was read and dropped
 * for as long as the client kept trickling, the socket held for good.
 */
let server: Server | undefined
let client: Socket | undefined
/** The server's side of the last connection. */
let accepted: Socket | undefined
afterEach(async () => {
  client?.destroy()
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

async function start(clock: ManualClock, requestTimeout: number): Promise<number> {
  const app = express()
  app.use(deadline({ defaultMs: 1000, reserveMs: 0, clock }))
  // Never reads the body: the deadline answers.
  app.post('/', () => {})
  server = createServer(app)
  server.requestTimeout = requestTimeout
  server.on('connection', (socket: Socket) => {
    accepted = socket
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as AddressInfo).port
}

/** A POST that declares 100 000 bytes and has sent 3, once the app has it. */
async function slowUpload(port: number): Promise<{ socket: Socket }> {
  const socket = connect(port, '127.0.0.1')
  client = socket
  // A socket the server destroys with its upload unread is reset.
  socket.on('error', () => {})
  socket.setEncoding('latin1')
  socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc')
  await once(server!, 'request')
  return { socket }
}

describe('a 504 written while the upload is still arriving', () => {
  it('keeps the connection no longer than Node`s requestTimeout, counted from arrival', async () => {
    const clock = new ManualClock()
    const port = await start(clock, 60_000)
    const { socket } = await slowUpload(port)
    const answered = once(socket, 'data')
    clock.advance(1000)
    expect(String((await answered)[0]).split('\r\n')[0]).toBe('HTTP/1.1 504 Gateway Timeout')
    // The client goes on trickling: the connection stays while requestTimeout has not run out.
    socket.write('more')
    clock.advance(58_000)
    expect(accepted?.destroyed).toBe(false)
    // Destroyed with the upload unread: the client sees a reset, after the 504 it has read.
    // (events.once would reject with the reset: the close is what counts.)
    const closed = new Promise((resolve) => socket.once('close', resolve))
    clock.advance(1_000)
    expect(accepted?.destroyed).toBe(true)
    await closed
  })

  it('a body that completes in time leaves the keep-alive connection open for the next request', async () => {
    const clock = new ManualClock()
    const port = await start(clock, 60_000)
    const { socket } = await slowUpload(port)
    const answered = once(socket, 'data')
    clock.advance(1000)
    await answered
    socket.write('x'.repeat(100_000 - 3))
    // The next request on the same socket is served: the body was read to its end.
    const request = 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n'
    socket.write(request)
    await once(server!, 'request')
    // Past the first request's requestTimeout: its bound was released with its body.
    let next = once(socket, 'data')
    clock.advance(60_000)
    expect(String((await next)[0]).split('\r\n')[0]).toBe('HTTP/1.1 504 Gateway Timeout')
    socket.write(request)
    await once(server!, 'request')
    next = once(socket, 'data')
    clock.advance(1000)
    expect(String((await next)[0]).split('\r\n')[0]).toBe('HTTP/1.1 504 Gateway Timeout')
  })
})
