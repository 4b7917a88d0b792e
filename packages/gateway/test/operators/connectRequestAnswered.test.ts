import type { Socket } from 'node:net'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'
import { rawExchange as exchange, rawHeaderOf as headerOf } from '../support/rawExchange.js'

/**
 * A CONNECT (a client, or curl -x, given the gateway as its HTTPS proxy)
 * met Node's default for a server with no 'connect' listener: the socket
 * destroyed, nothing written, no x-request-id, no log line — curl said
 * "Proxy CONNECT aborted" and the gateway's log had nothing for it.
 */
describe('a CONNECT request, under startGateway', () => {
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

  it('is answered 405 in OpenAI’s error shape, with its x-request-id and a request line', async () => {
    const provider = await fakeProvider('openai', ['sk-connect-0001'])
    fake = provider.fake
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'x']) } },
      { drainOnSignals: false },
    )
    const answer = await exchange(
      harness.url,
      'CONNECT api.openai.com:443 HTTP/1.1\r\nhost: api.openai.com:443\r\nx-request-id: tunnel-1\r\n\r\n',
      sockets,
    )
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 405 Method Not Allowed')
    expect(headerOf(answer, 'x-request-id')).toBe('tunnel-1')
    expect(headerOf(answer, 'connection')).toBe('close')
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {
      error: { code: string; type: string }
    }
    expect(body.error).toMatchObject({ code: 'method_not_allowed', type: 'invalid_request_error' })
    expect(harness.logs.filter((l) => l.event === 'request')).toEqual([
      expect.objectContaining({
        requestId: 'tunnel-1',
        method: 'CONNECT',
        status: 405,
        error: 'method_not_allowed',
      }),
    ])
    expect(fake.requests).toHaveLength(0)
  })

  it('pipelined behind a request still being answered, waits its turn: that answer is not cut', async () => {
    const provider = await fakeProvider('openai', ['sk-connect-0001'])
    fake = provider.fake
    // Still generating when the CONNECT behind it is read.
    fake.setReply(reply.text('hello there', { latencyMs: 100 }))
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'x']) } },
      { drainOnSignals: false },
    )
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    const answer = await exchange(
      harness.url,
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: post-1\r\n\r\n${body}` +
        'CONNECT api.openai.com:443 HTTP/1.1\r\nhost: api.openai.com:443\r\nx-request-id: tunnel-1\r\n\r\n',
      sockets,
    )
    // Written at once, the 405 came first, read as the POST's answer, and
    // the close cut the POST's own (logged 499).
    // The second head follows the first body directly (no line break after JSON).
    const statusLines = answer.match(/HTTP\/1\.1 \d{3} [^\r]*/g)
    expect(statusLines).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 405 Method Not Allowed'])
    expect(answer).toContain('hello there')
    // In either order (see malformedBodyAnswered.test.ts): on Node 22+ the
    // 405's line, written when the answer ahead closes, comes first.
    const lines = harness.logs
      .filter((l) => l.event === 'request')
      .sort((a, b) => Number(a.status) - Number(b.status))
    expect(lines.map((l) => [l.requestId, l.status])).toEqual([
      ['post-1', 200],
      ['tunnel-1', 405],
    ])
  })
})
