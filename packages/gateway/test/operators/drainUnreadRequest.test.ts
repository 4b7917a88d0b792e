import { connect, type Socket } from 'node:net'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fallback, type Harness, startHarness } from '../support/harness.js'

const BODY = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
const POST =
  'POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\ncontent-type: application/json\r\n' +
  `content-length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`

/** Everything read on `socket` until it closes, and the error that closed it, if any. */
function readAll(socket: Socket): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    let text = ''
    let error: string | undefined
    socket.on('data', (chunk) => {
      text += chunk
    })
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message
    })
    socket.on('close', () => resolve(error === undefined ? { text } : { text, error }))
  })
}

/** Resolves once a whole answer (headers and a `content-length` body) has been read. */
function oneAnswer(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const onData = (chunk: Buffer) => {
      text += chunk
      const end = text.indexOf('\r\n\r\n')
      const length = /content-length: (\d+)/i.exec(text)?.[1]
      if (end < 0 || length === undefined) return
      if (Buffer.byteLength(text) - (end + 4) < Number(length)) return
      socket.off('data', onData)
      resolve(text)
    }
    socket.on('data', onData)
  })
}

/**
 * `startGateway`'s `close()` with a request that has reached the gateway's
 * socket but not yet been read: the process was busy when it came (a stop
 * signal under load is handled in the same turn of the event loop). The
 * README's promise: a connection with a request arriving is left open, and
 * that request answered (the drain's 503) — not reset, unanswered, unlogged.
 */
describe('a request that arrived just before close(), not yet read', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  let socket: Socket | undefined
  afterEach(async () => {
    socket?.destroy()
    await harness?.close()
    await fake?.close()
    fake = undefined
    harness = undefined
    socket = undefined
  })

  it("on a kept-alive connection: the drain's 503, with connection: close, logged — not a reset", async () => {
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('hi') })
    harness = await startHarness({
      providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { m: fallback(['p', 'gpt']) },
    })
    const { port } = new URL(harness.url)
    const client = connect(Number(port), '127.0.0.1')
    socket = client
    // A first answer: the connection is now kept alive between requests.
    const first = oneAnswer(client)
    client.write(POST)
    expect((await first).split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
    const rest = readAll(client)
    // The next request is in the gateway's socket (loopback: written before
    // write() returns), and close() comes before the gateway has read it.
    client.write(POST)
    const report = await harness.running.close()
    const { text, error } = await rest
    expect(error).toBeUndefined()
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable')
    expect(text.toLowerCase()).toContain('connection: close')
    expect(text).toContain('"code":"shutting_down"')
    expect(report).toMatchObject({ inFlight: 0, cutOff: 0 })
    const lines = harness.logs.filter((l) => l.event === 'request')
    expect(lines.map((l) => [l['status'], l['error']])).toEqual([
      [200, undefined],
      [503, 'shutting_down'],
    ])
    expect(fake.requests).toHaveLength(1)
  })

  it("on a new connection, not yet accepted or not yet read: the drain's 503 — not a reset", async () => {
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('hi') })
    harness = await startHarness({
      providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { m: fallback(['p', 'gpt']) },
    })
    const running = harness.running
    const { port } = new URL(harness.url)
    let closing: ReturnType<typeof running.close> | undefined
    const client = connect(Number(port), '127.0.0.1', () => {
      // Connected (the kernel took it: the gateway may not have accepted it
      // yet), the request written, and close() in the same turn.
      client.write(POST)
      closing = running.close()
    })
    socket = client
    const { text, error } = await readAll(client)
    expect(error).toBeUndefined()
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable')
    expect(text).toContain('"code":"shutting_down"')
    expect(await closing).toMatchObject({ inFlight: 0, cutOff: 0 })
    expect(harness.logs.filter((l) => l.event === 'request')).toMatchObject([
      { status: 503, error: 'shutting_down' },
    ])
    expect(fake.requests).toHaveLength(0)
  })
})
