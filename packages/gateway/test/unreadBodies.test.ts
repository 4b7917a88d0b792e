import { once } from 'node:events'
import { Agent, type IncomingMessage, request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { LINGER_BYTES } from '../src/http/closeAfterAnswer.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A request answered without its body being read to its end (not JSON, a
 * route that reads no body, a budget already spent) closes its connection
 * after the answer: otherwise Node reads and drops the rest of the body to
 * keep the connection usable, for as long and as much as the client sends.
 * A body read in full keeps the connection alive. And in a drain, a stream
 * whose headers (keep-alive) went out before it began closes its connection
 * when it ends, instead of leaving it open and idle.
 */

/** A raw HTTP/1.1 connection: what came back, as text, and whether the server ended it. */
interface Raw {
  socket: Socket
  received(): string
  /** Resolves once `test(received)` holds; rejects if the socket closes first. */
  until(test: (text: string) => boolean): Promise<string>
  /** The server's FIN (or a reset) arrived. */
  readonly ended: boolean
  closed: Promise<void>
}

async function openRaw(port: number, options: { allowHalfOpen?: boolean } = {}): Promise<Raw> {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: options.allowHalfOpen ?? false })
  socket.on('error', () => {})
  let text = ''
  let ended = false
  const waiters = new Set<() => void>()
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1')
    for (const check of waiters) check()
  })
  socket.on('end', () => {
    ended = true
  })
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.once('close', () => {
    ended = true
    for (const check of waiters) check()
  })
  await once(socket, 'connect')
  return {
    socket,
    received: () => text,
    get ended() {
      return ended
    },
    closed,
    until: (test) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (test(text)) {
            waiters.delete(check)
            resolve(text)
          } else if (socket.destroyed) {
            waiters.delete(check)
            reject(new Error(`closed before the expected answer; received: ${text.slice(0, 300)}`))
          }
        }
        waiters.add(check)
        check()
      }),
  }
}

/** The whole first answer (Content-Length delimited) is in `text`. */
function wholeAnswer(text: string): boolean {
  const head = text.indexOf('\r\n\r\n')
  if (head === -1) return false
  const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, head))?.[1]
  return length !== undefined && text.length >= head + 4 + Number(length)
}

function headerOf(text: string, name: string): string | undefined {
  const head = text.slice(0, text.indexOf('\r\n\r\n'))
  return new RegExp(`\\r\\n${name}: ([^\\r]*)`, 'i').exec(head)?.[1]
}

function statusLines(text: string): string[] {
  // Not anchored to a line: an answer's status line follows the previous body directly.
  return text.match(/HTTP\/1\.1 \d{3} [^\r]*/g) ?? []
}

/**
 * After the first answer: the end of the body and a second request on the
 * same connection. A connection kept alive answers it; one closed after the
 * first answer ends without a second (no wait: either happens).
 */
async function secondRequestAnswered(raw: Raw, endOfBody: string): Promise<boolean> {
  raw.socket.write(`${endOfBody}GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n`)
  await Promise.race([raw.until((text) => statusLines(text).length >= 2), raw.closed]).catch(
    () => {},
  )
  return statusLines(raw.received()).length >= 2
}

const CHUNKED_TEXT = 'content-type: text/plain\r\ntransfer-encoding: chunked\r\n'

describe('a body the gateway does not read', () => {
  let fake: FakeProvider
  let harness: Harness
  let port: number
  const sockets: Socket[] = []
  beforeAll(async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'gpt']) },
    })
    port = Number(new URL(harness.url).port)
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy()
  })
  afterAll(async () => {
    await harness.close()
    await fake.close()
  })

  it('not JSON, chunked: the 400 says connection: close, the connection ends, and the rest of the upload is not read on and on', async () => {
    // Half-open allowed: the client keeps sending after the server's FIN, as an uploader would.
    const raw = await openRaw(port, { allowHalfOpen: true })
    sockets.push(raw.socket)
    raw.socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n${CHUNKED_TEXT}\r\n5\r\nhello\r\n`,
    )
    const answer = await raw.until(wholeAnswer)
    expect(statusLines(answer)).toEqual(['HTTP/1.1 400 Bad Request'])
    expect(headerOf(answer, 'connection')).toBe('close')

    // Keep uploading: a connection kept alive takes all of it, for good; a
    // closed one stops taking it (a reset, EPIPE) once the lingering close
    // has read its most, plus what the socket buffers hold and what arrives
    // between two of its checks. (The cap only ends the test on a connection
    // that takes everything.)
    const piece = Buffer.alloc(1024 * 1024, 0x61)
    const frame = Buffer.concat([Buffer.from('100000\r\n'), piece, Buffer.from('\r\n')])
    const most = 8 * LINGER_BYTES
    let sent = 0
    let refused = false
    while (sent < most && !refused) {
      refused = !(await new Promise<boolean>((resolve) => {
        if (raw.socket.destroyed || raw.socket.writableEnded) return resolve(false)
        raw.socket.write(frame, (error) => resolve(error == null))
      }))
      if (!refused) sent += piece.length
    }
    expect(refused).toBe(true)
    expect(sent).toBeLessThan(most)
    expect(raw.ended).toBe(true)
    // One answer only: the server answered nothing more on that connection.
    expect(statusLines(raw.received())).toHaveLength(1)
    expect(fake.requests).toHaveLength(0)
  })

  it.each([
    {
      what: 'GET /v1/models with a body',
      head: `GET /v1/models HTTP/1.1\r\nhost: x\r\n${CHUNKED_TEXT}`,
      status: 'HTTP/1.1 200 OK',
    },
    {
      what: 'POST to a path with no route',
      head: `POST /v1/nothing-here HTTP/1.1\r\nhost: x\r\n${CHUNKED_TEXT}`,
      status: 'HTTP/1.1 404 Not Found',
    },
    {
      what: 'POST /v1/chat/completions with a text/plain body',
      head: `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n${CHUNKED_TEXT}`,
      status: 'HTTP/1.1 400 Bad Request',
    },
  ])(
    '$what: answered with connection: close, and the connection closes after it',
    async ({ head, status }) => {
      const raw = await openRaw(port)
      sockets.push(raw.socket)
      raw.socket.write(`${head}\r\n5\r\nhello\r\n`)
      const answer = await raw.until(wholeAnswer)
      expect(statusLines(answer)).toEqual([status])
      expect(headerOf(answer, 'connection')).toBe('close')
      expect(await secondRequestAnswered(raw, '0\r\n\r\n')).toBe(false)
      expect(raw.ended).toBe(true)
    },
  )

  it('a budget already spent (refused before the body is read): the connection closes after the 504', async () => {
    const raw = await openRaw(port)
    sockets.push(raw.socket)
    raw.socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
        'transfer-encoding: chunked\r\nx-deadline-remaining-ms: 0\r\n\r\n1\r\n{\r\n',
    )
    const answer = await raw.until(wholeAnswer)
    expect(statusLines(answer)).toEqual(['HTTP/1.1 504 Gateway Timeout'])
    expect(await secondRequestAnswered(raw, '1\r\n}\r\n0\r\n\r\n')).toBe(false)
    expect(raw.ended).toBe(true)
  })

  it('a JSON body read in full keeps the connection alive: the next request goes on the same socket', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      const post = () =>
        new Promise<{ res: IncomingMessage; reused: boolean }>((resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/v1/chat/completions',
              agent,
              headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
            },
            (res) => {
              res.resume()
              res.on('end', () => resolve({ res, reused: req.reusedSocket }))
            },
          )
          req.on('error', reject)
          req.end(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }))
        })
      const first = await post()
      const second = await post()
      expect(first.res.statusCode).toBe(200)
      expect(first.res.headers.connection).toBe('keep-alive')
      expect(second.res.statusCode).toBe(200)
      expect(second.reused).toBe(true)
    } finally {
      agent.destroy()
    }
  })
})

describe('a stream answered across the start of a drain', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  let raw: Raw | undefined
  afterEach(async () => {
    raw?.socket.destroy()
    await harness?.close()
    await fake?.close()
    fake = undefined
    harness = undefined
    raw = undefined
  })

  it('its headers said keep-alive: the connection closes after its last event', async () => {
    // The pause between the two tokens runs on the provider's own clock: the
    // stream goes on when the test says, after the drain has begun.
    const providerClock = new ManualClock()
    fake = await startFakeProvider({ dialect: 'openai', clock: providerClock })
    fake.enqueue(reply.text('', { tokens: ['one', ' two'], tokenDelayMs: 1000 }))
    harness = await startHarness({
      providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { m: fallback(['p', 'gpt']) },
    })
    raw = await openRaw(Number(new URL(harness.url).port))
    const body = JSON.stringify({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    })
    raw.socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    const started = await raw.until((text) => text.includes('"one"'))
    expect(statusLines(started)).toEqual(['HTTP/1.1 200 OK'])
    expect(headerOf(started, 'connection')).toBe('keep-alive')

    // The router's drain only (the server keeps listening and keeps its connections).
    const closing = harness.running.gateway.close()
    // The provider is waiting out the pause before its second token.
    while (providerClock.pendingTimers === 0) await new Promise((r) => setImmediate(r))
    providerClock.advance(1000)
    const streamed = await raw.until((text) => text.endsWith('\r\n0\r\n\r\n'))
    expect(streamed).toContain('data: [DONE]')
    await closing
    expect(await secondRequestAnswered(raw, '')).toBe(false)
    expect(raw.ended).toBe(true)
    expect(statusLines(raw.received())).toHaveLength(1)
  })
})
