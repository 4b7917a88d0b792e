import { once } from 'node:events'
import { createServer, type IncomingMessage, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type LogRecord } from '../../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * A client that sends its headers and part of its body, then nothing: the
 * body read must end with the request's deadline like everything else —
 * the gateway's own OpenAI-shaped 504, a `request` log line, the metrics —
 * not the ingress middleware's plain 504 with no log line, and the socket
 * that still owes body bytes is closed rather than held open.
 */
describe('a request body that stops arriving', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  /** POSTs headers and the first bytes of a body announced as longer, and never sends the rest. */
  async function stall(extraHeaders: Record<string, string> = {}) {
    const { port } = new URL(harness!.url)
    const req = request({
      host: '127.0.0.1',
      port: Number(port),
      method: 'POST',
      path: '/v1/chat/completions',
      agent: false,
      headers: {
        'content-type': 'application/json',
        'content-length': '200',
        'x-request-id': 'stalled-body-1',
        ...extraHeaders,
      },
    })
    req.on('error', () => {})
    req.write('{"model":"m","messages":[{"role":"user","content":"')
    const [res] = (await once(req, 'response')) as [IncomingMessage]
    const closed = once(res.socket, 'close')
    let text = ''
    for await (const chunk of res) text += chunk
    return { res, body: JSON.parse(text) as unknown, closed, req }
  }

  it('gets the gateway’s OpenAI-shaped 504 at its deadline, one request log line, a metric, and its socket closed', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'gpt']) },
    })
    const { res, body, closed } = await stall({ 'x-deadline-remaining-ms': '300' })
    expect(res.statusCode).toBe(504)
    expect(res.headers['x-request-id']).toBe('stalled-body-1')
    expect(res.headers['x-should-retry']).toBe('false')
    expect(body).toEqual({
      error: {
        message: 'the request ran out of time (deadline exceeded)',
        type: 'server_error',
        param: null,
        code: 'deadline_exceeded',
      },
    })
    expect(res.headers.connection).toBe('close')
    await closed
    const lines = harness.logs.filter((l) => l.event === 'request')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      level: 'warn',
      requestId: 'stalled-body-1',
      path: '/v1/chat/completions',
      status: 504,
      error: 'deadline_exceeded',
    })
    expect(typeof lines[0]?.['latencyMs']).toBe('number')
    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="deadline_exceeded"\} 1/)
    expect(page).toMatch(/hourglass_gateway_deadline_expiries_total 1/)
    expect(fake.requests).toHaveLength(0)
  })

  it('answered by the ingress backstop while the body is still coming (replyReserveMs 0): still one request log line', async () => {
    // With no reply reserve the body read's deadline ends with the request's
    // own, so deadline()'s backstop writes the 504 first (as it also does
    // when a stalled event loop leaves both timers overdue). The body read
    // then fails into the router's error handler with the answer sent: it
    // wrote no line, and the request was in no log.
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { replyReserveMs: 0 },
    )
    const { res, body, closed } = await stall({ 'x-deadline-remaining-ms': '300' })
    expect(res.statusCode).toBe(504)
    expect(body).toMatchObject({ error: { code: 'deadline_exceeded' } })
    await closed
    const lines = harness.logs.filter((l) => l.event === 'request')
    expect(lines).toMatchObject([
      { requestId: 'stalled-body-1', status: 504, error: 'deadline_exceeded' },
    ])
    expect(fake.requests).toHaveLength(0)
  })

  it('a body declared larger than maxBodyBytes gets its 413 at once, before the upload is read, and its socket closed', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { maxBodyBytes: 1024 },
    )
    // 100 MB announced, a few bytes sent: body-parser alone would wait for
    // the rest before answering (here, until the 5 s deadline: a 504).
    const { res, body, closed } = await stall({
      'content-length': String(100 * 1024 * 1024),
      'x-deadline-remaining-ms': '5000',
    })
    expect(res.statusCode).toBe(413)
    expect(body).toMatchObject({ error: { code: 'request_too_large' } })
    expect(res.headers.connection).toBe('close')
    await closed
    const lines = harness.logs.filter((l) => l.event === 'request')
    expect(lines).toMatchObject([{ status: 413, error: 'request_too_large' }])
    expect(fake.requests).toHaveLength(0)
  })

  it('during a drain, a stalled body is cancelled at the drain timeout with 503 shutting_down, not cut after the grace', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    const logs: LogRecord[] = []
    const gateway = createGateway(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { logger: (r) => logs.push(r), drainTimeoutMs: 100 },
    )
    let arrived: () => void = () => {}
    const arrival = new Promise<void>((resolve) => {
      arrived = resolve
    })
    const server = createServer((req, res) => {
      arrived()
      gateway(req as never, res as never, () => {})
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const req = request({
        host: '127.0.0.1',
        port: (server.address() as AddressInfo).port,
        method: 'POST',
        path: '/v1/chat/completions',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': '200' },
      })
      req.on('error', () => {})
      req.write('{"model":"m",')
      await arrival
      const answered = once(req, 'response') as Promise<[IncomingMessage]>
      await gateway.close()
      const [res] = await answered
      let text = ''
      for await (const chunk of res) text += chunk
      expect(res.statusCode).toBe(503)
      expect(JSON.parse(text)).toMatchObject({ error: { code: 'shutting_down' } })
      expect(logs.find((l) => l.event === 'request')).toMatchObject({
        status: 503,
        error: 'shutting_down',
      })
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
