import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressEndMessage } from '../src/index.js'
import { majors, record } from './support/servers.js'

// Node answers some requests itself, on the raw socket, and then destroys
// it: `requestTimeout` (a body still arriving: `408 Request Timeout`) and a
// malformed body (a bad chunk size: `400 Bad Request`). The response the
// handler held never started, so its `statusCode` still read Express's
// default 200, and the end event said the caller got a 200 it never saw.
// It now says what Node sent, when Node sent it (no `clientError` listener
// of the server's own, which answers in Node's place).

const head = 'POST / HTTP/1.1\r\nhost: x\r\n'

describe.each(majors)('an answer Node writes itself ($name)', (major) => {
  let server: Server | undefined
  afterEach(async () => {
    server?.closeAllConnections()
    server?.close()
    server = undefined
  })

  async function serve(options: object): Promise<number> {
    const clock = new ManualClock()
    const app = major.app()
    app.use(deadline({ defaultMs: 60_000, clock }))
    // Reads the body, never answers: only Node does.
    app.post('/', (req) => {
      req.resume()
    })
    server = createServer(options, app)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return (server.address() as AddressInfo).port
  }

  async function exchange(port: number, bytes: string): Promise<string> {
    const socket = connect(port, '127.0.0.1')
    let got = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      got += chunk
    })
    socket.on('error', () => {})
    socket.write(bytes)
    await once(socket, 'close')
    return got.split('\r\n')[0] ?? ''
  }

  it.each([
    [
      'requestTimeout, the body still arriving',
      { requestTimeout: 200, connectionsCheckingInterval: 20 },
      `${head}content-length: 100\r\n\r\n{"a"`,
      408,
    ],
    [
      'a malformed chunk size',
      {},
      `${head}transfer-encoding: chunked\r\n\r\n2\r\n{"\r\nzz\r\n`,
      400,
    ],
  ])('%s: the end event says the status the client got', async (_name, options, bytes, status) => {
    const port = await serve(options)
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    try {
      const line = await exchange(port, bytes)
      await ends.count(1)
      const [end] = ends.messages
      expect([line.slice(0, 12), end?.outcome, end?.statusCode]).toEqual([
        `HTTP/1.1 ${status}`,
        'error',
        status,
      ])
    } finally {
      ends.stop()
    }
  })

  it('a server with its own clientError listener answers in Node’s place: no status of Node’s', async () => {
    const port = await serve({})
    // It cuts the connection with the error, writing nothing.
    server?.on('clientError', (error, socket) => {
      socket.destroy(error)
    })
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    try {
      const line = await exchange(
        port,
        `${head}transfer-encoding: chunked\r\n\r\n2\r\n{"\r\nzz\r\n`,
      )
      await ends.count(1)
      expect([line, ends.messages[0]?.outcome, ends.messages[0]?.statusCode]).toEqual([
        '',
        'error',
        200,
      ])
    } finally {
      ends.stop()
    }
  })
})
