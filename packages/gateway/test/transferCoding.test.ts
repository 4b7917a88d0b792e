import { connect } from 'node:net'
import { gzipSync } from 'node:zlib'
import type { FakeProvider } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A transfer coding beside `chunked` (`Transfer-Encoding: gzip, chunked`):
 * Node's parser strips the chunking and hands over the gzip bytes as the
 * body, and the gateway read them as JSON — a 400 `invalid_utf8` for bytes
 * the client never sent as text. RFC 9112 §6.1: a 501 naming the coding,
 * nothing sent to a provider, the connection closed after it. Written by
 * hand on a socket: no HTTP client sends such a request.
 */
describe('Transfer-Encoding other than chunked', () => {
  let fake: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-transfer-0001'])
    fake = p.fake
    h = await startHarness({ providers: { p: p.entry }, models: { m: fallback(['p', 'gpt-4o']) } })
  })
  afterAll(async () => {
    await h?.close()
    await fake?.close()
  })

  const json = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })

  /** One whole request, chunked by hand; resolves with the answer's head and body. */
  function send(transferEncoding: string, body: Buffer): Promise<string> {
    const { port } = new URL(h.url)
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1')
      let answer = ''
      socket.setEncoding('latin1')
      socket.on('data', (text: string) => {
        answer += text
        const end = answer.indexOf('\r\n\r\n')
        const length = /content-length: (\d+)/i.exec(answer)
        if (end === -1 || length === null) return
        if (answer.length - end - 4 < Number(length[1])) return
        socket.destroy()
        resolve(answer)
      })
      socket.on('error', reject)
      socket.write(
        'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\n' +
          'Content-Type: application/json\r\n' +
          `Transfer-Encoding: ${transferEncoding}\r\n\r\n`,
      )
      socket.write(`${body.length.toString(16)}\r\n`)
      socket.write(body)
      socket.write('\r\n0\r\n\r\n')
    })
  }

  function parsed(answer: string) {
    const [head = '', body = ''] = answer.split('\r\n\r\n')
    return {
      status: Number(head.split(' ')[1]),
      head: head.toLowerCase(),
      body: JSON.parse(body) as { error: { code: string; message: string } },
    }
  }

  it.each([
    ['gzip, chunked', 'gzip'],
    ['GZIP,chunked', 'gzip'],
    ['x-foo;q=1 , chunked', 'x-foo'],
  ])('%s is a 501 naming %s, nothing sent, the connection closed', async (te, coding) => {
    const before = fake.requests.length
    const r = parsed(await send(te, gzipSync(json)))
    expect(r.status, JSON.stringify(r.body)).toBe(501)
    expect(r.body.error.code).toBe('unsupported_transfer_encoding')
    expect(r.body.error.message).toContain(`"${coding}"`)
    // Its body unread: the connection is not kept for another request.
    expect(r.head).toContain('connection: close')
    expect(r.head).toContain('x-should-retry: false')
    expect(fake.requests.length).toBe(before)
    const line = h.logs.findLast((l) => l.event === 'request')
    expect(line?.['status']).toBe(501)
  })

  it.each(['chunked', 'Chunked', 'identity, chunked'])(
    '%s is still read (no coding beside the chunking)',
    async (te) => {
      const r = parsed(await send(te, Buffer.from(json)))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
    },
  )
})
