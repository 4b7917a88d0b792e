import { once } from 'node:events'
import { type ClientRequest, type IncomingMessage, request } from 'node:http'
import { connect } from 'node:net'
import { createGzip, gzipSync } from 'node:zlib'
import type { FakeProvider } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * `maxBodyBytes`: "larger bodies get 413" — as soon as the body is past the
 * limit, however it comes (chunked with no Content-Length, or compressed and
 * inflating past it), not once the client has finished sending (it may never
 * finish: then a 504 at the deadline, counted as a deadline expiry); and the
 * 413 reaches a client still sending its upload, not lost to a reset.
 */
const LIMIT = 64 * 1024

describe('a body past maxBodyBytes', () => {
  let fake: FakeProvider
  let harness: Harness
  beforeAll(async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { maxBodyBytes: LIMIT },
    )
  })
  afterAll(async () => {
    await harness.close()
    await fake.close()
  })

  /** Starts a POST that is never ended: only an answer given before the upload's end can arrive. */
  function unendedPost(headers: Record<string, string>): {
    req: ClientRequest
    response: Promise<{ res: IncomingMessage; body: { error: { code: string; message: string } } }>
  } {
    const { port } = new URL(harness.url)
    const req = request({
      host: '127.0.0.1',
      port: Number(port),
      method: 'POST',
      path: '/v1/chat/completions',
      agent: false,
      headers: {
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
        // Long enough that a refusal only at the deadline cannot pass for the 413.
        'x-deadline-remaining-ms': '3000',
        ...headers,
      },
    })
    req.on('error', () => {})
    const response = (async () => {
      const [res] = (await once(req, 'response')) as [IncomingMessage]
      let text = ''
      for await (const chunk of res) text += chunk
      return { res, body: JSON.parse(text) }
    })()
    return { req, response }
  }

  function expectRefused(
    res: IncomingMessage,
    body: { error: { code: string; message: string } },
    requestId: string,
  ): void {
    expect(res.statusCode).toBe(413)
    expect(body.error.code).toBe('request_too_large')
    // The same code as a request over a provider's TPM limit: the message
    // tells them apart, and names the limit the client must stay under.
    expect(body.error.message).toBe(`the body exceeds this gateway's limit of ${LIMIT} bytes`)
    expect(res.headers.connection).toBe('close')
    const line = harness.logs.find((l) => l.event === 'request' && l['requestId'] === requestId)
    expect(line).toMatchObject({ status: 413, error: 'request_too_large' })
  }

  it('chunked, no Content-Length, still coming: 413 once past the limit, before the upload ends', async () => {
    const { req, response } = unendedPost({ 'x-request-id': 'chunked-oversize' })
    req.write(Buffer.alloc(LIMIT + 1024, 0x20))
    const { res, body } = await response
    expectRefused(res, body, 'chunked-oversize')
    req.destroy()
    expect(fake.requests).toHaveLength(0)
  })

  it('gzip inflating past the limit, still coming: 413 once inflated past it, before the upload ends', async () => {
    const { req, response } = unendedPost({
      'x-request-id': 'gzip-oversize',
      'content-encoding': 'gzip',
    })
    const gzip = createGzip()
    gzip.pipe(req)
    // A few hundred bytes on the wire, 4 × the limit once inflated; flushed, never ended.
    gzip.write(Buffer.alloc(4 * LIMIT, 0x20))
    gzip.flush()
    const { res, body } = await response
    expectRefused(res, body, 'gzip-oversize')
    gzip.destroy()
    req.destroy()
    expect(fake.requests).toHaveLength(0)
  })

  it('a compressed body within the limit is still answered', async () => {
    const { port } = new URL(harness.url)
    const payload = gzipSync(
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    )
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: payload,
    })
    expect(res.status).toBe(200)
    await res.text()
  })

  it('declared too large, the client sending its whole body without waiting (no Expect: 100-continue): it reads the 413, every time', async () => {
    const { port } = new URL(harness.url)
    // Past what loopback's socket buffers hold (a few MB), so the client is
    // still sending when the answer comes; under the 16 MiB read after it.
    const body = Buffer.alloc(8 * 1024 * 1024, 0x20)
    const statusLines: string[] = []
    for (let i = 0; i < 3; i++) {
      const socket = connect(Number(port), '127.0.0.1')
      socket.on('error', () => {})
      await once(socket, 'connect')
      // As python's requests and httpx do: the headers and the whole body
      // first, reading only once the body is sent (or could not be).
      socket.pause()
      const sent = new Promise((resolve) => {
        socket.write(
          `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
        )
        socket.write(body, resolve)
      })
      await sent
      let received = ''
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1')
      })
      socket.resume()
      // Not events.once: it rejects on the 'error' a write to a closed connection may raise.
      await new Promise((resolve) => socket.once('close', resolve))
      statusLines.push(received.split('\r\n')[0] ?? '')
    }
    expect(statusLines).toEqual(Array(3).fill('HTTP/1.1 413 Payload Too Large'))
  })
})
