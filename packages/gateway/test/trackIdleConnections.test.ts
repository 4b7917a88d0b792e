import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { trackIdleConnections } from '../src/http/trackIdleConnections.js'

// More than loopback's socket buffers hold (some 4 MB here): most of it
// stays queued in the server's socket while the client reads nothing.
const BIG = Buffer.alloc(12 * 1024 * 1024, 'a')

/**
 * The sweep `startGateway`'s `close()` runs (through `server.close()`):
 * which connections are between requests. On a plain server with no
 * keep-alive timeout, so only the sweep can close a connection here.
 */
describe('trackIdleConnections: what server.close() closes', () => {
  let server: Server | undefined
  const sockets: Socket[] = []
  afterEach(() => {
    for (const socket of sockets) socket.destroy()
    sockets.length = 0
    server?.closeAllConnections()
    server = undefined
  })

  async function serve(): Promise<{ port: number; accepted: Socket[] }> {
    const s = createServer({ keepAliveTimeout: 0 })
    server = s
    const served = trackIdleConnections(s)
    s.on('request', (req, res) => {
      served(res)
      req.resume()
      if (req.url === '/big') res.end(BIG)
      else res.end('ok')
    })
    const accepted: Socket[] = []
    s.on('connection', (socket: Socket) => accepted.push(socket))
    s.listen(0, '127.0.0.1')
    await once(s, 'listening')
    return { port: (s.address() as AddressInfo).port, accepted }
  }

  async function open(port: number): Promise<Socket> {
    const socket = connect(port, '127.0.0.1')
    sockets.push(socket)
    socket.on('error', () => {})
    await once(socket, 'connect')
    return socket
  }

  /** Everything read until the connection ends. */
  async function readAll(socket: Socket): Promise<string> {
    const chunks: Buffer[] = []
    for await (const chunk of socket) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString()
  }

  it('closes a kept-alive connection between requests', async () => {
    const { port } = await serve()
    const kept = await open(port)
    kept.setEncoding('utf8')
    let text = ''
    const answered = new Promise<void>((resolve) => {
      kept.on('data', (chunk: string) => {
        text += chunk
        if (text.endsWith('ok')) resolve()
      })
    })
    kept.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
    await answered
    expect(text).toMatch(/\r\nconnection: keep-alive\r\n/i)
    server?.close()
    await once(kept, 'close')
  })

  it('leaves a whole answer its client has not read yet: read after the close, it arrives whole', async () => {
    const { port } = await serve()
    const client = await open(port)
    client.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n')
    // Its first bytes are here, so `res.end(BIG)` ran (Node's `finished`);
    // read nothing more: most of it is still queued in the server's socket.
    await once(client, 'readable')
    server?.close()
    client.end()
    const all = await readAll(client)
    expect(all.length - all.indexOf('\r\n\r\n') - 4).toBe(BIG.length)
  })

  it('leaves a connection whose request is arriving, or that has sent none yet: each is answered', async () => {
    const { port, accepted } = await serve()
    const arriving = await open(port)
    arriving.write('GET / HTTP/1.1\r\n')
    // Read by the server: its parser has the request's first line.
    await expect.poll(() => accepted[0]?.bytesRead ?? 0).toBeGreaterThan(0)
    const fresh = await open(port)
    await expect.poll(() => accepted.length).toBe(2)
    server?.close()
    arriving.write('Host: x\r\nConnection: close\r\n\r\n')
    fresh.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    const answer = /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok$/
    expect(await readAll(arriving)).toMatch(answer)
    expect(await readAll(fresh)).toMatch(answer)
  })
})
