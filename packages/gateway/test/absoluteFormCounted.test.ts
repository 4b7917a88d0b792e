import type { Socket } from 'node:net'
import { reply } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway } from '../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'
import { rawExchange } from './support/rawExchange.js'

// A request target in absolute form whose authority WHATWG's URL refuses (a
// port past 65535) is still routed by Express (parseurl reads its path), so
// the gateway served it — but the tracker's `/v1/` test read the whole target
// as its path: not an API request, so not counted in /metrics, not refused
// in a drain, not waited for by one, and its log line's path was the URL.
describe('an absolute-form target with an authority URL refuses', () => {
  let harness: Harness | undefined
  const sockets: Socket[] = []
  afterEach(async () => {
    for (const s of sockets) s.destroy()
    await harness?.close()
    harness = undefined
  })

  it('in flight during a drain is waited for, as any API request', async () => {
    const { fake, entry } = await fakeProvider('openai', ['k'])
    try {
      fake.setReply(reply.text('hi', { latencyMs: 300 }))
      harness = await startHarness({
        providers: { p: entry },
        models: { m: fallback(['p', 'gpt']) },
      })
      const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      const request =
        'POST http://h:99999/v1/chat/completions HTTP/1.1\r\nHost: h\r\nConnection: close\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      const answered = rawExchange(harness.url, request, sockets)
      await fake.waitForRequests(1)
      const report = await harness.running.close()
      harness = undefined
      expect((await answered).split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
      expect(report).toMatchObject({ inFlight: 1, drained: 1, cutOff: 0 })
    } finally {
      await fake.close()
    }
  })

  it('is counted in /metrics and logged with its path', async () => {
    const { fake, entry } = await fakeProvider('openai', ['k'])
    try {
      harness = await startHarness({
        providers: { p: entry },
        models: { m: fallback(['p', 'gpt']) },
      })
      const answer = await rawExchange(
        harness.url,
        'GET http://h:99999/v1/models HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
        sockets,
      )
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
      const page = await (await fetch(`${harness.url}/metrics`)).text()
      expect(page).toMatch(/hourglass_gateway_requests_total\{status_class="2xx"[^}]*\} 1\b/)
      const lines = harness.logs.filter((l) => l.event === 'request')
      expect(lines.map((l) => l['path'])).toEqual(['/v1/models'])
    } finally {
      await fake.close()
    }
  })

  it('arriving during a drain, mounted in an app, is refused 503 shutting_down with nothing sent', async () => {
    const { fake, entry } = await fakeProvider('openai', ['k'])
    fake.setReply(reply.text('hi', { latencyMs: 300 }))
    const gateway = createGateway(
      { providers: { p: entry }, models: { m: fallback(['p', 'gpt']) } },
      { logger: () => {} },
    )
    const app = express()
    app.use(gateway)
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
      const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      const chat = (target: string) =>
        `POST ${target} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      const first = rawExchange(url, chat('/v1/chat/completions'), sockets)
      await fake.waitForRequests(1)
      const closing = gateway.close()
      const late = await rawExchange(url, chat('http://h:99999/v1/chat/completions'), sockets)
      expect(late.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable')
      expect(late).toContain('"code":"shutting_down"')
      expect((await first).split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
      expect(await closing).toMatchObject({ inFlight: 1, drained: 1, cutOff: 0 })
      expect(fake.requests).toHaveLength(1)
    } finally {
      server.close()
      server.closeAllConnections()
      await gateway.close()
      await fake.close()
    }
  })
})
