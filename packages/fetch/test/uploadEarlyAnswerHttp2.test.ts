import { createServer, type Server } from 'node:http'
import {
  type ClientHttp2Session,
  connect,
  createServer as createHttp2Server,
  type Http2Server,
  type Http2ServerRequest,
  type ServerHttp2Stream,
} from 'node:http2'
import type { AddressInfo } from 'node:net'
import type { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { closedPort } from '@hourglass/testkit'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'

// uploadEarlyAnswer.test.ts's proxy over HTTP/2: an http2 server's
// compatibility request (`Http2ServerRequest`) proxied as the body to an
// upstream that answers 413 before reading it. It was destroyed through
// its iterator's return(): on Node 20 the rest of the client's upload
// then reached a destroyed request, its HTTP/2 stream stayed paused, its
// flow-control window never reopened, and the client's stream never
// closed (Node 22 and later drop it). It is read out and dropped now, as
// a server's HTTP/1 request is.

let upstream: Server
let fetch: HourglassFetch
let proxy: Http2Server
let session: ClientHttp2Session
let proxied: Http2ServerRequest | undefined
/** The same proxy on the core API (`server.on('stream')`), the stream itself as the body. */
let core: Http2Server
let coreSession: ClientHttp2Session
let proxiedStream: ServerHttp2Stream | undefined
/** A port nothing listens on. */
let down: string

beforeAll(async () => {
  upstream = createServer((_req, res) => {
    res.writeHead(413, { connection: 'close' })
    res.end('too big')
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  // Not a port a server just released: another file's listen(0) took one
  // (its answer failed to parse, an HTTPParserError where ConnectError was due).
  down = `http://127.0.0.1:${await closedPort()}/`
  fetch = createFetch()
  proxy = createHttp2Server(async (req, res) => {
    if (req.method === 'GET') {
      res.end('next')
      return
    }
    proxied = req
    try {
      const answer = await fetch(req.url === '/down' ? down : `${base}/early`, {
        method: 'POST',
        body: req,
        duplex: 'half',
        retry: false,
      } as never)
      res.statusCode = answer.status
      res.end(await answer.text())
    } catch (error) {
      res.statusCode = 502
      res.end(`bad gateway: ${(error as Error).name}`)
    }
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  session = connect(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`)
  core = createHttp2Server()
  core.on('stream', async (stream, headers) => {
    proxiedStream = stream
    let status: number
    let text: string
    try {
      const answer = await fetch(headers[':path'] === '/down' ? down : `${base}/early`, {
        method: 'POST',
        body: stream,
        duplex: 'half',
        retry: false,
      } as never)
      status = answer.status
      text = await answer.text()
    } catch (error) {
      status = 502
      text = `bad gateway: ${(error as Error).name}`
    }
    stream.respond({ ':status': status })
    stream.end(text)
  })
  await new Promise<void>((resolve) => core.listen(0, '127.0.0.1', resolve))
  coreSession = connect(`http://127.0.0.1:${(core.address() as AddressInfo).port}`)
})
afterAll(async () => {
  session.destroy()
  coreSession.destroy()
  await new Promise<void>((resolve) => core.close(() => resolve()))
  await fetch.close()
  upstream.closeAllConnections()
  await new Promise<void>((resolve) => upstream.close(() => resolve()))
  await new Promise<void>((resolve) => proxy.close(() => resolve()))
})

/** Uploads to `path` 1 KiB, then, once answered, more than the stream's window: the proxy's answer and whether all of it went. */
async function upload(
  path: string,
  over: ClientHttp2Session = session,
): Promise<{ answer: string; sent: boolean }> {
  const sending = over.request({ ':method': 'POST', ':path': path })
  const closed = new Promise<void>((resolve) => sending.on('close', resolve))
  const first = await new Promise<string>((resolve, reject) => {
    let text = ''
    sending.on('response', (headers) => {
      text = `${headers[':status']} `
      // More than the stream's 64 KiB flow-control window: all of it goes
      // out only if the proxy reads it.
      sending.write(Buffer.alloc(128 * 1024))
      sending.end(Buffer.alloc(1024))
    })
    sending.on('data', (chunk: Buffer) => {
      text += chunk
    })
    sending.on('end', () => resolve(text))
    sending.on('error', reject)
    sending.write(Buffer.alloc(1024))
  })
  // Before, on Node 20, never: the test's own timeout failed it.
  await closed
  return { answer: first, sent: sending.writableLength === 0 && sending.rstCode === 0 }
}

it("an http2 proxy's upload (body: req) answered early: the rest of the client's upload is dropped, its stream closes and the session carries the next request", async () => {
  expect(await upload('/upload')).toEqual({ answer: '413 too big', sent: true })
  if (proxied === undefined) throw new Error('the proxy saw no upload')
  // A Readable, which its typings do not let finished() take as it is.
  await finished(proxied as Readable)
  expect(proxied.complete).toBe(true)
  const next = await new Promise<string>((resolve, reject) => {
    const asking = session.request({ ':path': '/next' })
    let text = ''
    asking.on('data', (chunk: Buffer) => {
      text += chunk
    })
    asking.on('end', () => resolve(text))
    asking.on('error', reject)
    asking.end()
  })
  expect(next).toBe('next')
})

it("an http2 proxy's upload (body: req) never read (its upstream is down): the handler answers its 502, the client's upload goes whole", async () => {
  expect(await upload('/down')).toEqual({ answer: '502 bad gateway: ConnectError', sent: true })
  if (proxied === undefined) throw new Error('the proxy saw no upload')
  // Read out to its end, not destroyed (`finished` rejects a premature close).
  await finished(proxied as Readable)
  expect(proxied.complete).toBe(true)
})

// The core API's stream, the twin of the compatibility request: it was
// destroyed at the call's end. Its upstream down, the handler's respond()
// threw ERR_HTTP2_INVALID_STREAM (an unhandled rejection) and the client
// got no answer; answered early, the rest of the client's upload never went.
it("an http2 server's own stream (server.on('stream')) proxied as the body, answered early: the rest of the client's upload is dropped, its stream closes", async () => {
  expect(await upload('/upload', coreSession)).toEqual({ answer: '413 too big', sent: true })
  expect(proxiedStream?.rstCode).toBe(0)
})

it("an http2 server's own stream (server.on('stream')) proxied as the body, its upstream down: the handler answers its 502, the client's upload goes whole", async () => {
  expect(await upload('/down', coreSession)).toEqual({
    answer: '502 bad gateway: ConnectError',
    sent: true,
  })
  expect(proxiedStream?.rstCode).toBe(0)
})
