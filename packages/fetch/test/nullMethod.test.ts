import { once } from 'node:events'
import { type AddressInfo, createServer, type Server } from 'node:net'
import { Agent, Request, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor, type HourglassFetch } from '../src/index.js'
import { recordEgress } from './helpers.js'

let server: Server | undefined
let fetch: HourglassFetch | undefined
let agent: Agent | undefined
afterEach(async () => {
  await fetch?.close()
  fetch = undefined
  await agent?.close()
  agent = undefined
  if (server) {
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/**
 * A raw HTTP/1.1 server that records each request line's method and answers
 * 503: node:http answers a method it does not know (`null`) with its own 400
 * and never shows it, so the request fetch sends is read off the wire.
 */
async function answering503(): Promise<{ url: string; methods: string[] }> {
  const methods: string[] = []
  server = createServer((socket) => {
    socket.on('error', () => {})
    let head = ''
    socket.on('data', (chunk) => {
      head += chunk.toString('latin1')
      if (!head.includes('\r\n\r\n')) return
      methods.push(head.slice(0, head.indexOf(' ')))
      socket.end(
        'HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n',
      )
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`, methods }
}

describe('init.method as fetch reads it', () => {
  it("method: null is sent as the method 'null', as fetch sends it, and judged as that method: a 503 is not retried as if it were a GET", async () => {
    const { url, methods } = await answering503()
    // What WHATWG fetch makes of it (WebIDL converts null to the string "null").
    expect(new Request(url, { method: null as unknown as string }).method).toBe('null')
    fetch = createFetch({ retry: { statuses: [503] } })
    const events = recordEgress()
    try {
      const res = await fetch(url, { method: null as unknown as string })
      expect(res.status).toBe(503)
      expect(methods).toEqual(['null'])
      expect(events.attempts.map((m) => m.method)).toEqual(['null'])
      expect(events.retries).toEqual([])
      expect(events.skipped.map((m) => [m.method, m.why])).toEqual([['null', 'not-idempotent']])
    } finally {
      events.stop()
    }
  })

  it('method: undefined is no method (GET), and a lower-case get is normalised to GET, as fetch does: both retried', async () => {
    const { url, methods } = await answering503()
    fetch = createFetch({ retry: { statuses: [503] } })
    expect((await fetch(url, { method: undefined as unknown as string })).status).toBe(503)
    expect((await fetch(url, { method: 'get' })).status).toBe(503)
    expect(methods).toEqual(['GET', 'GET', 'GET', 'GET'])
  })

  it("a method fetch does not normalise goes out as written ('purge'), and is named so in the events", async () => {
    const { url, methods } = await answering503()
    fetch = createFetch({ retry: { statuses: [503] } })
    const events = recordEgress()
    try {
      expect((await fetch(url, { method: 'purge' })).status).toBe(503)
      expect(methods).toEqual(['purge'])
      expect(events.attempts.map((m) => m.method)).toEqual(['purge'])
      expect(events.skipped.map((m) => m.why)).toEqual(['not-idempotent'])
    } finally {
      events.stop()
    }
  })
})

describe('the method as undici sends it, through the interceptor', () => {
  it("a lower-case 'put' goes out as 'put' (undici does not change its case) and is judged as that method, not as PUT: a 503 is not retried", async () => {
    const { url, methods } = await answering503()
    agent = new Agent({ headersTimeout: 0, bodyTimeout: 0 })
    const dispatcher = agent.compose(deadlineInterceptor({ retry: { statuses: [503] } }))
    const events = recordEgress()
    try {
      const res = await request(url, { dispatcher, method: 'put' as 'PUT' })
      await res.body.dump()
      expect(res.statusCode).toBe(503)
      expect(methods).toEqual(['put'])
      expect(events.attempts.map((m) => m.method)).toEqual(['put'])
      expect(events.skipped.map((m) => [m.method, m.why])).toEqual([['put', 'not-idempotent']])
      // The control: PUT itself is retried.
      const again = await request(url, { dispatcher, method: 'PUT' })
      await again.body.dump()
      expect(methods).toEqual(['put', 'PUT', 'PUT'])
    } finally {
      events.stop()
    }
  })
})
