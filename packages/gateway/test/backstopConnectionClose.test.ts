import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A 504 written while the request's body is still coming is the last answer
 * on its connection (the gateway closes it rather than read on a body nobody
 * wants): its head must say `connection: close`. It said `keep-alive` when
 * the ingress middleware's backstop wrote it — `replyReserveMs: 0`, or a
 * budget spent on arrival — and the FIN followed: a pooling client (undici,
 * Node's keep-alive agent) that took the connection back for its next
 * request could send it on a connection the gateway was closing.
 */
describe('a 504 written before the body was read says connection: close', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  const sockets: Socket[] = []
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy()
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  /** Sends `head` and part of a body on a raw connection: the answer's head, and the server's FIN (`ended`). */
  async function partialBody(head: string): Promise<{ head: string; ended: Promise<void> }> {
    const socket = connect({ port: Number(new URL(harness!.url).port), host: '127.0.0.1' })
    sockets.push(socket)
    socket.on('error', () => {})
    await once(socket, 'connect')
    const ended = once(socket, 'end').then(() => {})
    let text = ''
    const answered = new Promise<string>((resolve, reject) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1')
        const end = text.indexOf('\r\n\r\n')
        if (end !== -1) resolve(text.slice(0, end))
      })
      socket.once('close', () => reject(new Error(`closed before an answer: ${text}`)))
    })
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
        `content-length: 200\r\n${head}\r\n{"model":"m","messages":[`,
    )
    return { head: await answered, ended }
  }

  /** Writes `raw` on a new connection and resolves the first two status lines, and all that came. */
  async function twoAnswers(raw: string): Promise<{ statuses: string[]; text: string }> {
    const socket = connect({ port: Number(new URL(harness!.url).port), host: '127.0.0.1' })
    sockets.push(socket)
    socket.on('error', () => {})
    await once(socket, 'connect')
    let text = ''
    const statuses = new Promise<string[]>((resolve, reject) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1')
        const lines = text.match(/HTTP\/1\.1 \d{3}/g) ?? []
        if (lines.length === 2) resolve(lines)
      })
      socket.once('close', () => reject(new Error(`closed after: ${text}`)))
    })
    socket.write(raw)
    return { statuses: await statuses, text }
  }

  function connectionOf(head: string): string | undefined {
    return /\r\nconnection: ([^\r]*)/i.exec(head)?.[1]?.toLowerCase()
  }

  async function gateway(options: { replyReserveMs?: number } = {}): Promise<void> {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      options,
    )
  }

  it('the backstop’s 504 at the deadline (replyReserveMs: 0), the body still coming', async () => {
    await gateway({ replyReserveMs: 0 })
    const { head, ended } = await partialBody('x-deadline-remaining-ms: 300\r\n')
    expect(head).toMatch(/^HTTP\/1\.1 504 /)
    expect(connectionOf(head)).toBe('close')
    await ended
    expect(fake!.requests).toHaveLength(0)
  })

  it('the backstop’s 504 for a body read whole keeps the connection: the next request is answered on it', async () => {
    await gateway({ replyReserveMs: 0 })
    fake!.enqueue(reply.text('too late', { latencyMs: 5000 }))
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    const { statuses, text } = await twoAnswers(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
        `content-length: ${body.length}\r\nx-deadline-remaining-ms: 300\r\n\r\n${body}` +
        'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n',
    )
    expect(statuses).toEqual(['HTTP/1.1 504', 'HTTP/1.1 200'])
    expect(connectionOf(text)).toBe('keep-alive')
  })

  it('a budget spent on arrival, the body still coming', async () => {
    await gateway()
    const { head, ended } = await partialBody('x-deadline-remaining-ms: 0\r\n')
    expect(head).toMatch(/^HTTP\/1\.1 504 /)
    expect(connectionOf(head)).toBe('close')
    await ended
  })

  it('a budget spent on arrival with an empty body (content-length: 00) keeps the connection', async () => {
    await gateway()
    const { statuses, text } = await twoAnswers(
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
        'content-length: 00\r\nx-deadline-remaining-ms: 0\r\n\r\n' +
        'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n',
    )
    expect(statuses).toEqual(['HTTP/1.1 504', 'HTTP/1.1 200'])
    expect(connectionOf(text)).toBe('keep-alive')
  })
})
