import { once } from 'node:events'
import { connect } from 'node:net'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * HTTP/1.1 pipelining: a client writes a streamed request and a whole one
 * before reading. Node answers them in order, so the second answer, ready
 * at once, waits in memory until the stream ahead of it ends. The gateway
 * took that wait for a client that had stopped reading: at the second
 * request's deadline it marked it cut (`warn`, `deadline_exceeded`, counted
 * as an expiry) and closed the connection when its turn came — the client,
 * reading the whole time, got the stream and then a closed socket instead
 * of its answer.
 */
describe('an answer queued behind a stream on its connection', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  it('is delivered after the stream, not cut at its own deadline, and logged as answered', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    // The stream outlasts the second request's budget (0.4 s: ample for its
    // own call, which takes a few ms, on a loaded machine too) more than
    // twice over: 8 tokens, 120 ms apart.
    fake.setReply((request) =>
      request.stream
        ? reply.text('one two three four five six seven eight', { tokenDelayMs: 120 })
        : reply.text('quick answer'),
    )
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'gpt']) },
    })
    const post = (body: object, headers: string) => {
      const text = JSON.stringify(body)
      return (
        'POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(text)}\r\n${headers}\r\n${text}`
      )
    }
    const messages = [{ role: 'user', content: 'hi' }]
    const socket = connect(Number(new URL(harness.url).port), '127.0.0.1')
    let received = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      received += chunk
    })
    await once(socket, 'connect')
    socket.write(
      post({ model: 'm', stream: true, messages }, 'x-request-id: first\r\n') +
        post(
          { model: 'm', messages },
          'x-request-id: second\r\nx-deadline-remaining-ms: 400\r\nconnection: close\r\n',
        ),
    )
    await once(socket, 'close')

    expect(received).toContain('data: [DONE]')
    const second = received.slice(received.indexOf('data: [DONE]'))
    // Its status line, after the stream's end (none: the connection was closed instead).
    expect(/HTTP\/1\.1 \d+[^\r]*/.exec(second)?.[0], 'the second answer, after the stream').toBe(
      'HTTP/1.1 200 OK',
    )
    expect(second).toContain('"content":"quick answer"')
    const line = harness.logs.find((l) => l.event === 'request' && l['requestId'] === 'second')
    expect(line).toMatchObject({ level: 'info', status: 200 })
    expect(line?.['error']).toBeUndefined()
    // Nor counted as an expiry.
    const page = await (await fetch(`${harness.url}/metrics`)).text()
    // (On the page from the start, at 0: test/operators/countersFromZero.test.ts.)
    expect(page).toMatch(/^hourglass_gateway_deadline_expiries_total 0$/m)
  })
})
