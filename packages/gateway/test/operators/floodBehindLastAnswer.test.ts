import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { type ProviderReply, reply, startFakeProvider } from '@hourglass/testkit'
import express from 'express'
import { expect, it } from 'vitest'
import { createGateway, type LogRecord } from '../../src/index.js'

/**
 * Requests pipelined behind an answer that closes the connection (here a
 * 405) are not served (`behind_last_answer`), but their answers were left
 * open: none held an unsent byte, so Node — which stops reading pipelined
 * requests only once the answers queued on a connection hold a socket's
 * high-water mark — never stopped. Behind an answer still in flight, one
 * connection of tiny GETs was parsed and logged without bound (109,226
 * lines and +284 MB of heap in 8 s). Now Node stops reading once their
 * answers, ended though never sent, reach that mark, as it did before those
 * requests were skipped, and the answer in flight still reaches its client
 * whole.
 */
it('requests pipelined behind a 405 and an answer in flight stop being read; that answer is delivered whole', async () => {
  const fake = await startFakeProvider({ dialect: 'openai' })
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  fake.setReply((): ProviderReply | Promise<ProviderReply> => held.then(() => reply.text('first')))
  const logs: LogRecord[] = []
  const app = express()
  const gateway = createGateway(
    {
      providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
    },
    { logger: (record) => logs.push(record) },
  )
  app.use(gateway)
  const server = createServer(app)
  // Every answer, to see each one end: a skipped one is closed with its
  // connection (Node 20 and 22 emit no 'close' for an answer still queued,
  // and OpenTelemetry's http instrumentation ends a server span on it).
  const answers: ServerResponse[] = []
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => answers.push(res))
  const accepted = once(server, 'connection') as Promise<[Socket]>
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  const client = connect(port, '127.0.0.1')
  try {
    client.on('error', () => {})
    await once(client, 'connect')
    const [serverSide] = await accepted
    let received = ''
    client.setEncoding('latin1')
    client.on('data', (chunk: string) => {
      received += chunk
    })
    const ended = once(client, 'end')
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    client.write(
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-request-id: A\r\n' +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    )
    await fake.waitForRequests(1)
    // The refusal and 600 GETs (~22 KB): their empty answers, never sent,
    // hold more than a socket's high-water mark (16 KB on Node 20, 64 KB
    // from Node 22) of unsent bytes.
    const get = 'GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n'
    client.write(
      `PUT /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}${get.repeat(600)}`,
    )
    // Node stops reading this connection (it never did before the fix)...
    await expect.poll(() => serverSide.isPaused()).toBe(true)
    const skipped = () => logs.filter((l) => l.reason === 'behind_last_answer').length
    const parsed = skipped()
    expect(parsed).toBeGreaterThan(0)
    expect(parsed).toBeLessThanOrEqual(600)
    // ...so 600 more, sent while A is still in flight, are never parsed.
    client.write(get.repeat(600))

    release()
    await ended
    // A's answer whole, then the 405, then the close: nothing for the skipped ones.
    expect(received.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 405'])
    expect(received).toContain('"content":"first"')
    expect(
      logs.filter((l) => l.event === 'request' && l.requestId === 'A').map((l) => l.status),
    ).toEqual([200])
    expect(skipped()).toBe(parsed)
    expect(fake.requests).toHaveLength(1)
    await expect.poll(() => answers.filter((res) => !res.closed).length).toBe(0)
    expect(answers).toHaveLength(parsed + 2)
    expect(answers.slice(2).every((res) => res.statusCode === 499)).toBe(true)
  } finally {
    release()
    client.destroy()
    server.closeAllConnections()
    server.close()
    await gateway.close()
    await fake.close()
  }
})
