import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type LogRecord, type RunningGateway, startGateway } from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

/**
 * The handler's deadline ends `replyReserveMs` (25 ms) before the ingress
 * middleware's, which is only the backstop. On a loaded machine the handler
 * can still be unwinding its aborted call (a few promise hops) when the
 * backstop fires; with a stream's headers already sent, the backstop can
 * only close the connection. That close is the deadline's, not the client's:
 * logged and counted as `deadline_exceeded` (status 200, what the client
 * saw), never as a 499 `client_closed`. Both timers fall due in one
 * `advance` here, the order a late event loop runs them in.
 */
describe('a stream whose deadline the ingress backstop ends first', () => {
  let fake: FakeProvider | undefined
  let running: RunningGateway | undefined
  let socket: Socket | undefined
  afterEach(async () => {
    socket?.destroy()
    await running?.close()
    await fake?.close()
    fake = running = socket = undefined
  })

  it('is logged and counted as deadline_exceeded with status 200, not as a client that left', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    // The first token at once, the next never within the test.
    fake.setReply(reply.text('Hello there, slowly', { tokenDelayMs: 600_000 }))
    const clock = new ManualClock()
    const lines: LogRecord[] = []
    let logged: () => void = () => {}
    const requestLogged = new Promise<void>((resolve) => {
      logged = resolve
    })
    running = await startGateway({
      port: 0,
      clock,
      config: {
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
        deadline: { defaultMs: 60_000, reserveMs: 10 },
      },
      logger: (record) => {
        if (record['event'] !== 'request') return
        lines.push(record)
        logged()
      },
    })
    const { port } = new URL(running.url)
    const client = connect(Number(port), '127.0.0.1')
    socket = client
    client.on('error', () => {})
    await once(client, 'connect')
    const body = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    client.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n' +
        `x-request-id: backstop-1\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    // Read until the first token has arrived: the stream is under way.
    let received = ''
    client.setEncoding('latin1')
    while (!received.includes('Hello')) {
      const [chunk] = (await once(client, 'data')) as [string]
      received += chunk
    }
    expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/)

    // The handler's deadline (59,965 ms) and the backstop (59,990 ms) in one step.
    clock.advance(60_000)
    await requestLogged
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      requestId: 'backstop-1',
      stream: true,
      status: 200,
      error: 'deadline_exceeded',
    })
    const page = await (await fetch(`${running.url}/metrics`)).text()
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="deadline_exceeded"\} 1/)
    expect(page).not.toMatch(/kind="client_closed"/)
    expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="2xx"\} 1/)
  })
})
