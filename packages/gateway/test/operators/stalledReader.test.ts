import { once } from 'node:events'
import { connect } from 'node:net'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type LogRecord, type RunningGateway, startGateway } from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

// 20 MB of answer: more than loopback's socket buffers hold, so a client
// that reads nothing leaves the gateway waiting on backpressure.
const WORD = ` ${'abcdefghij'.repeat(200)}`
const LONG_ANSWER = WORD.repeat(10_000).slice(1)

/**
 * A streaming client that keeps its connection open and stops reading: no
 * error event can reach it and `end()` never flushes, so at the deadline
 * the gateway must close the connection itself — not wait on backpressure
 * forever with the request unlogged, uncounted and its socket held.
 */
describe('a streaming client that stops reading', () => {
  let fake: FakeProvider | undefined
  let running: RunningGateway | undefined
  afterEach(async () => {
    await running?.close()
    await fake?.close()
    running = undefined
    fake = undefined
  })

  it('is cut at its deadline: one request line with deadline_exceeded, counted, socket closed', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply(reply.text(LONG_ANSWER))
    const logs: LogRecord[] = []
    let logged: (record: LogRecord) => void = () => {}
    const requestLine = new Promise<LogRecord>((resolve) => {
      logged = resolve
    })
    running = await startGateway({
      config: { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      port: 0,
      logger: (record) => {
        logs.push(record)
        if (record['event'] === 'request') logged(record)
      },
    })
    const { port } = new URL(running.url)
    const socket = connect(Number(port), '127.0.0.1')
    await once(socket, 'connect')
    socket.pause() // reads nothing from here on
    const closed = once(socket, 'close')
    const body = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'tell me everything' }],
      stream: true,
    })
    // `Connection: close`: on a loaded machine the provider may not have
    // filled the buffers by the deadline; the gateway then ends the stream
    // cleanly (its error event last) and, kept alive, the connection stayed
    // open after the client read it all — the wait for its close below hung.
    socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n' +
        'content-type: application/json\r\nx-deadline-remaining-ms: 2500\r\n' +
        `x-request-id: stalled-reader-1\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )

    // Without the cut, this line never comes: the handler waits on 'drain'.
    let bound: NodeJS.Timeout | undefined
    const line = await Promise.race([
      requestLine,
      new Promise<undefined>((resolve) => {
        bound = setTimeout(() => resolve(undefined), 10_000)
      }),
    ])
    clearTimeout(bound)
    expect(line).toMatchObject({
      requestId: 'stalled-reader-1',
      stream: true,
      status: 200,
      error: 'deadline_exceeded',
    })
    const page = await (await fetch(`${running.url}/metrics`)).text()
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="deadline_exceeded"\} 1/)
    expect(page).not.toMatch(/kind="client_closed"/)
    // What was buffered drains, then the connection ends: it is not held open.
    socket.resume()
    socket.on('error', () => {})
    await closed
  })
})
