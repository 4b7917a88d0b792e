import { once } from 'node:events'
import type { IncomingHttpHeaders, Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { DeadlinePropagator } from '@hourglass/otel'
import { propagation } from '@opentelemetry/api'
import { CompositePropagator, W3CTraceContextPropagator } from '@opentelemetry/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { instrumentHttpAndUndici, setupOtel } from './helpers/otel.js'

/**
 * A global DeadlinePropagator behind deadline(): instrumentation-http
 * extracts the inbound headers with the propagator's defaults (every header
 * trusted, a 30 s cap), and injects on every outbound call. The next hop must
 * get what the handler has — deadline()'s `maxMs` and `trust` — not the
 * inbound header read again under other rules.
 */

const otel = setupOtel()
let uninstrument: () => void = () => {}
const servers: Server[] = []
let base: string
const received: IncomingHttpHeaders[] = []

beforeAll(async () => {
  // Before express and http are loaded: the instrumentations patch them as they are required.
  uninstrument = instrumentHttpAndUndici(otel.tracerProvider)
  // In place of the W3C one the helper set: a global is not replaced, only unset and set.
  propagation.disable()
  propagation.setGlobalPropagator(
    new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new DeadlinePropagator()],
    }),
  )
  const express = (await import('express')).default
  const { deadline } = await import('@hourglass/express')
  // Required: instrumentation-http replaces the module's get(), which an
  // ESM namespace's named export does not see.
  const http = createRequire(import.meta.url)('node:http') as typeof import('node:http')
  const listen = async (server: Server) => {
    servers.push(server)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }
  const next = await listen(
    http.createServer((req, res) => {
      received.push(req.headers)
      res.end('ok')
    }),
  )
  const app = express()
  app.use('/wide', deadline({ maxMs: 300_000 }))
  app.use('/untrusting', deadline({ trust: [], defaultMs: 5000 }))
  app.get(['/wide', '/untrusting'], (req, res) => {
    // The call a handler makes with node:http: instrumentation-http injects into its headers.
    http.get(`${next}/`, (answer) => {
      answer.resume()
      answer.on('end', () => res.json({ handlerHas: req.deadline?.remaining() }))
    })
  })
  base = await listen(http.createServer(app))
})

afterAll(async () => {
  uninstrument()
  for (const server of servers) {
    server.closeAllConnections()
    server.close()
  }
  await otel.shutdown()
})

/** What the next hop was sent, and what the handler had left after the call. */
async function call(path: string, headers: Record<string, string>) {
  const answer = await fetch(`${base}${path}`, { headers })
  const { handlerHas } = (await answer.json()) as { handlerHas: number }
  const sent = received.at(-1)?.['x-deadline-remaining-ms']
  return { sent: Number(sent), raw: sent, handlerHas }
}

describe('a global DeadlinePropagator behind deadline()', () => {
  it("sends on what deadline({ maxMs: 300_000 }) gave the handler, not the propagator's own 30 s cap", async () => {
    for (const inbound of [{ 'x-deadline-remaining-ms': '120000' }, { 'grpc-timeout': '2M' }]) {
      const { sent, handlerHas } = await call('/wide', inbound)
      expect(sent).toBeGreaterThan(30_000)
      expect(sent).toBeGreaterThanOrEqual(Math.floor(handlerHas))
      expect(sent).toBeLessThanOrEqual(120_000)
    }
  })

  it('sends on what deadline({ trust: [] }) gave the handler, not the 0 of a header it ignored', async () => {
    for (const inbound of [
      { 'x-deadline-remaining-ms': '0' },
      { 'x-deadline-remaining-ms': '3' },
      { 'grpc-timeout': '1m' },
    ]) {
      const { sent, raw, handlerHas } = await call('/untrusting', inbound)
      expect(raw).toBeDefined()
      expect(sent).toBeGreaterThanOrEqual(Math.floor(handlerHas))
      expect(sent).toBeGreaterThan(3)
      expect(sent).toBeLessThanOrEqual(5000)
    }
  })
})
