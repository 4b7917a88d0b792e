import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type LogRecord, type RunningGateway, startGateway } from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

// 12 MB of answer in 6000 words: more than loopback's socket buffers hold
// (some 4 MB here), so a client that has read none of it leaves most of it
// queued in the gateway's socket after `res.end()`.
const WORD = ` ${'abcdefghij'.repeat(200)}`
const LONG_ANSWER = WORD.repeat(6000).slice(1)

/**
 * `startGateway`'s `close()` with a whole (non-streamed) answer ended but
 * not yet taken by its client: Node's `server.close()` closes the
 * connections it thinks idle, and one whose response has `end()`ed is idle
 * to it, however much is still queued. That answer is in flight: the drain
 * waits for it, then cuts it at `drainTimeoutMs` and says so.
 */
describe('a drain with a whole answer its client has not read yet', () => {
  let fake: FakeProvider | undefined
  let running: RunningGateway | undefined
  let socket: Socket | undefined
  afterEach(async () => {
    socket?.destroy()
    await running?.close()
    await fake?.close()
    running = undefined
    fake = undefined
    socket = undefined
  })

  async function answerWaiting(drainTimeoutMs: number) {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply(reply.text(LONG_ANSWER))
    const logs: LogRecord[] = []
    running = await startGateway({
      config: { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      port: 0,
      drainOnSignals: false,
      drainTimeoutMs,
      logger: (record) => logs.push(record),
    })
    const client = connect(Number(new URL(running.url).port), '127.0.0.1')
    socket = client
    await once(client, 'connect')
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'all of it' }] })
    client.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n' +
        `x-request-id: unread-1\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    // The answer's first bytes are here: it is written whole in one `end()`.
    // Not read: what arrives waits in the client's buffers, then the kernel's.
    await once(client, 'readable')
    return { client, logs, running }
  }

  /** Everything the client is sent until the connection ends: status line, headers, body. */
  async function readAll(client: Socket): Promise<{ declared: number; body: string }> {
    const chunks: Buffer[] = []
    client.on('error', () => {})
    for await (const chunk of client) chunks.push(chunk as Buffer)
    const all = Buffer.concat(chunks).toString()
    const headerEnd = all.indexOf('\r\n\r\n')
    const declared = Number(/content-length: (\d+)/i.exec(all.slice(0, headerEnd))?.[1])
    return { declared, body: all.slice(headerEnd + 4) }
  }

  it('waits for it: read after close() began, it arrives whole, and the drain says drained 1', async () => {
    const { client, logs, running } = await answerWaiting(30_000)
    const closing = running.close()
    const { declared, body } = await readAll(client)
    expect(Buffer.byteLength(body)).toBe(declared)
    const answer = JSON.parse(body) as { choices: { message: { content: string } }[] }
    expect(answer.choices[0]?.message.content).toBe(LONG_ANSWER)
    // In flight when the drain began (its handler was waiting for the
    // client), and finished on its own.
    expect(await closing).toEqual({ inFlight: 1, drained: 1, cutOff: 0, ms: expect.any(Number) })
    expect(logs.find((l) => l.event === 'request')).toMatchObject({
      requestId: 'unread-1',
      status: 200,
    })
    expect(logs.find((l) => l.event === 'request')?.['error']).toBeUndefined()
  })

  it('one never read is cut at drainTimeoutMs: reported cut off, logged as shutting_down', async () => {
    const { client, logs, running } = await answerWaiting(300)
    expect(await running.close()).toEqual({
      inFlight: 1,
      drained: 0,
      cutOff: 1,
      ms: expect.any(Number),
    })
    const shutdown = logs.find((l) => l.event === 'shutdown')
    expect(shutdown?.msg).toMatch(/^shutdown: drained 0 in \d+ ms, 1 cut off$/)
    expect(logs.find((l) => l.event === 'request')).toMatchObject({
      level: 'warn',
      requestId: 'unread-1',
      status: 200,
      error: 'shutting_down',
    })
    // What the kernel had taken still comes; then the connection ends, short.
    const { declared, body } = await readAll(client)
    expect(Buffer.byteLength(body)).toBeLessThan(declared)
  })
})
