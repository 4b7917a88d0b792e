import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import {
  type ClientHttp2Session,
  connect,
  constants,
  createServer as createHttp2Server,
  createSecureServer,
  type Http2SecureServer,
  type Http2Server,
  type ServerHttp2Stream,
} from 'node:http2'
import { type AddressInfo, connect as connectTcp } from 'node:net'
import { PassThrough } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Agent } from 'undici'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'

// An HTTP/2 upload cut short — the answer read while it was still being
// sent (or while its source had nothing to send yet), a redirect followed
// or a status retried mid-upload, the call failed, the proxied client
// gone — reached the server as
// a shorter body that read as whole: undici's writer, once the body it
// reads is done, sends END_STREAM, and undici's abort closes the stream
// with NO_ERROR (END_STREAM first): either way the server's stream ended
// ('end', `rstCode` 0). It is reset now (RST_STREAM CANCEL alone): the
// server's stream closes with `rstCode` 8, and one not answered yet is
// `aborted`. Each test waits on the upstream's events, not on a clock.

const cert = readFileSync(new URL('./fixtures/svc.test.cert.pem', import.meta.url))
const key = readFileSync(new URL('./fixtures/svc.test.key.pem', import.meta.url))
const CHUNK = 16 * 1024
const CHUNKS = 10

/** What the upstream saw of one upload, once its stream closed. */
interface Seen {
  received: number
  rstCode: number | undefined
  aborted: boolean
}

let upstream: Http2SecureServer
let base: string
let agent: Agent
let fetch: HourglassFetch
/** The next upload's first bytes, and its stream's close. */
let arrived: { first: Promise<void>; closed: Promise<Seen> }
let h2Proxy: Http2Server
let h2Client: ClientHttp2Session
let h1Proxy: Server
/** The proxy's call, once it has failed or been answered. */
let proxied: Promise<string>

function expectUpload(): void {
  let first!: () => void
  let closed!: (seen: Seen) => void
  arrived = {
    first: new Promise((resolve) => (first = resolve)),
    closed: new Promise((resolve) => (closed = resolve)),
  }
  onUpload = { first, closed }
}
let onUpload: { first: () => void; closed: (seen: Seen) => void } | undefined
/** '/busy' answers 503 next. */
let busyOnce = true

beforeAll(async () => {
  upstream = createSecureServer({ key, cert })
  upstream.on('stream', (stream: ServerHttp2Stream, headers) => {
    stream.on('error', () => {})
    const waiter = onUpload
    onUpload = undefined
    const seen: Seen = { received: 0, rstCode: undefined, aborted: false }
    // An ingest that acknowledges at once and reads on; '/hold' reads and never answers.
    const path = headers[':path']
    if (path === '/answer') stream.respond({ ':status': 200 })
    if (path === '/answer') stream.end('ok')
    // '/length' answers once it has the bytes `x-length` announces, before the body's end.
    if (path === '/length') {
      let got = 0
      stream.on('data', (chunk: Buffer) => {
        got += chunk.length
        if (got !== Number(headers['x-length']) || stream.headersSent) return
        stream.respond({ ':status': 200 })
        stream.end(String(got))
      })
    }
    // Answered at once, the answer left open, reading stopped after the
    // first chunk: the upload is still going when the client leaves it.
    // '/busy' is a 503 the first time, then reads the whole body and says its size.
    const early = path === '/see-other' || (path === '/busy' && busyOnce)
    if (path === '/see-other') stream.respond({ ':status': 303, location: '/answer' })
    if (path === '/busy' && busyOnce) stream.respond({ ':status': 503, 'retry-after': '0' })
    if (path === '/busy') busyOnce = !busyOnce
    if (path === '/busy' && !early) {
      stream.on('end', () => {
        stream.respond({ ':status': 200 })
        stream.end(String(seen.received))
      })
    }
    stream.on('data', (chunk: Buffer) => {
      seen.received += chunk.length
      if (early) stream.pause()
      waiter?.first()
    })
    stream.on('aborted', () => {
      seen.aborted = true
    })
    stream.on('close', () => {
      seen.rstCode = stream.rstCode
      waiter?.closed(seen)
    })
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  base = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  agent = new Agent({ allowH2: true, connect: { ca: cert } })
  fetch = createFetch()
  const forward = (body: unknown): Promise<string> =>
    fetch(`${base}/hold`, {
      method: 'POST',
      body,
      duplex: 'half',
      dispatcher: agent,
      retry: false,
    } as never).then(
      () => 'answered',
      (error: Error & { code?: string }) => `failed: ${error.code ?? error.name}`,
    )
  h2Proxy = createHttp2Server((req, res) => {
    proxied = forward(req)
    proxied.finally(() => res.stream.destroyed || res.end())
  })
  await new Promise<void>((resolve) => h2Proxy.listen(0, '127.0.0.1', resolve))
  h2Client = connect(`http://127.0.0.1:${(h2Proxy.address() as AddressInfo).port}`)
  h1Proxy = createServer((req: IncomingMessage, res) => {
    proxied = forward(req)
    proxied.finally(() => res.destroyed || res.end())
  })
  await new Promise<void>((resolve) => h1Proxy.listen(0, '127.0.0.1', resolve))
})

afterAll(async () => {
  h2Client.destroy()
  await fetch.close()
  await agent.destroy()
  h1Proxy.closeAllConnections()
  await new Promise((resolve) => h1Proxy.close(resolve))
  await new Promise((resolve) => h2Proxy.close(resolve))
  await new Promise((resolve) => upstream.close(resolve))
})

/** Reset mid-upload, not answered yet: `aborted`, `rstCode` 8, at most the one chunk sent. */
function expectReset(seen: Seen): void {
  expect({ rstCode: seen.rstCode, aborted: seen.aborted }).toEqual({
    rstCode: constants.NGHTTP2_CANCEL,
    aborted: true,
  })
  expect(seen.received).toBeGreaterThan(0)
  expect(seen.received).toBeLessThanOrEqual(CHUNK)
}

/** One chunk, then the rest once `release` is called. */
function gatedUpload() {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  let returned = false
  async function* body() {
    try {
      yield Buffer.alloc(CHUNK, 1)
      await gate
      for (let i = 1; i < CHUNKS; i++) yield Buffer.alloc(CHUNK, 1)
    } finally {
      returned = true
    }
  }
  return { body: body(), release, returned: () => returned }
}

it('over HTTP/2, an upload the server answered before reading it all is reset, not ended: the server never reads the part it got as the whole body', async () => {
  expectUpload()
  const upload = gatedUpload()
  const answer = await fetch(`${base}/answer`, {
    method: 'POST',
    body: upload.body,
    duplex: 'half',
    dispatcher: agent,
  } as never)
  // The caller reads its answer whole.
  expect(answer.status).toBe(200)
  expect(await answer.text()).toBe('ok')
  upload.release()
  const seen = await arrived.closed
  expect(seen.rstCode).toBe(constants.NGHTTP2_CANCEL)
  // The chunk the source gave after the call ended is not sent: the first alone arrived.
  expect(seen.received).toBe(CHUNK)
  expect(upload.returned()).toBe(true)
})

it('over HTTP/2, a ReadableStream upload the server answered before reading it all is reset too', async () => {
  expectUpload()
  let cancelled = false
  let pulls = 0
  const body = new ReadableStream<Uint8Array>({
    // One chunk, then a pull that waits on nothing but the cancel.
    pull: (controller) => {
      pulls += 1
      if (pulls === 1) controller.enqueue(new Uint8Array(CHUNK))
      else return new Promise<void>(() => {})
    },
    cancel: () => {
      cancelled = true
    },
  })
  const answer = await fetch(`${base}/answer`, {
    method: 'POST',
    body,
    duplex: 'half',
    dispatcher: agent,
  } as never)
  expect(await answer.text()).toBe('ok')
  const seen = await arrived.closed
  expect(seen.rstCode).toBe(constants.NGHTTP2_CANCEL)
  expect(seen.received).toBe(CHUNK)
  expect(cancelled).toBe(true)
})

it('over HTTP/2, an upload the caller aborts mid-way is reset: the server reads an aborted request, not a shorter body', async () => {
  expectUpload()
  const upload = gatedUpload()
  const controller = new AbortController()
  const call = fetch(`${base}/hold`, {
    method: 'POST',
    body: upload.body,
    duplex: 'half',
    dispatcher: agent,
    signal: controller.signal,
  } as never)
  await arrived.first
  controller.abort(new Error('caller left'))
  await expect(call).rejects.toThrow('caller left')
  expectReset(await arrived.closed)
})

it("an http2 proxy's upload (body: req) whose client resets its stream mid-upload is reset upstream over HTTP/2: the upstream reads an aborted request, not a shorter body", async () => {
  expectUpload()
  const controller = new AbortController()
  const stream = h2Client.request(
    { ':method': 'POST', ':path': '/' },
    { signal: controller.signal },
  )
  stream.on('error', () => {})
  stream.write(Buffer.alloc(CHUNK, 1))
  await arrived.first
  // RST_STREAM(CANCEL), the client's sending side still open.
  controller.abort()
  expectReset(await arrived.closed)
  expect(await proxied).toMatch(/^failed: /)
})

it("an HTTP/1 proxy's upload (body: req) whose client leaves mid-upload is reset upstream over HTTP/2: the upstream reads an aborted request, not a shorter body", async () => {
  expectUpload()
  const socket = connectTcp((h1Proxy.address() as AddressInfo).port, '127.0.0.1')
  socket.on('error', () => {})
  socket.write('POST / HTTP/1.1\r\nHost: proxy\r\nTransfer-Encoding: chunked\r\n\r\n')
  socket.write(`${CHUNK.toString(16)}\r\n${'x'.repeat(CHUNK)}\r\n`)
  await arrived.first
  socket.destroy()
  expectReset(await arrived.closed)
  expect(await proxied).toMatch(/^failed: /)
})

it("over HTTP/2, a body sent whole whose end is signalled only after the answer is not cut: the caller's pipeline into it resolves", async () => {
  expectUpload()
  // The wait undici is in when the answer comes may be the one that ends a
  // body sent whole: cut then (the stream destroyed), the caller's
  // pipeline failed with ERR_STREAM_PREMATURE_CLOSE though all was sent.
  const body = new PassThrough()
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  async function* source() {
    yield Buffer.alloc(CHUNK, 1)
    await gate
  }
  const piped = pipeline(source(), body)
  const answer = await fetch(`${base}/length`, {
    method: 'POST',
    body,
    duplex: 'half',
    headers: { 'x-length': String(CHUNK) },
    dispatcher: agent,
  } as never)
  expect(await answer.text()).toBe(String(CHUNK))
  release()
  await expect(piped).resolves.toBeUndefined()
  expect((await arrived.closed).received).toBe(CHUNK)
})

it('over HTTP/2, a redirect answered mid-upload, its answer still open, is reset as fetch follows it: the server never reads the part it got as the whole body', async () => {
  expectUpload()
  const body = Buffer.alloc(16 * CHUNK, 1)
  const answer = await fetch(`${base}/see-other`, {
    method: 'POST',
    body,
    dispatcher: agent,
  } as never)
  // The 303 is followed (a GET) and read whole.
  expect({ status: answer.status, text: await answer.text() }).toEqual({ status: 200, text: 'ok' })
  const seen = await arrived.closed
  expect(seen.rstCode).toBe(constants.NGHTTP2_CANCEL)
  expect(seen.received).toBeLessThan(body.length)
})

it("over HTTP/2, a 503 retried mid-upload is reset before the retry: the server reads the retry's body once, not a shorter one before it", async () => {
  expectUpload()
  const body = Buffer.alloc(16 * CHUNK, 1)
  const answer = await fetch(`${base}/busy`, {
    method: 'PUT',
    body,
    dispatcher: agent,
    retry: { statuses: [503] },
  } as never)
  // The retry's whole body reached the server.
  expect({ status: answer.status, text: await answer.text() }).toEqual({
    status: 200,
    text: String(body.length),
  })
  const seen = await arrived.closed
  expect(seen.rstCode).toBe(constants.NGHTTP2_CANCEL)
  expect(seen.received).toBeLessThan(body.length)
})
