import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { instrumentHttpAndUndici, setupOtel } from './helpers/otel.js'

/**
 * A streamed response the deadline cuts short has already sent its 200, so
 * instrumentation-http leaves the server span's status UNSET: the request
 * failed all the same, and the span has to say so itself.
 */

const otel = setupOtel()
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
let server: Server
let base: string

beforeAll(async () => {
  // Before express and http are loaded: the instrumentations patch them as they are required.
  uninstrument = instrumentHttpAndUndici(otel.tracerProvider)
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  const express = (await import('express')).default
  const { deadline } = await import('@hourglass/express')
  const { createServer } = await import('node:http')
  const app = express()
  app.use(deadline({ defaultMs: 2000 }))
  app.get('/stream', (_req, res) => {
    // Starts the answer, then never finishes it: the deadline ends it.
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('first part')
  })
  server = createServer(app)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  stop()
  uninstrument()
  server.closeAllConnections()
  server.close()
  await otel.shutdown()
})

const serverSpan = (spans: ReadableSpan[]) => spans.find((s) => s.kind === SpanKind.SERVER)

describe('a streamed response ended by its deadline', () => {
  it('fails the server span (status ERROR, error.type DEADLINE_EXCEEDED) although its status code was 200', async () => {
    const answer = await fetch(`${base}/stream`, { headers: { 'x-deadline-remaining-ms': '100' } })
    expect(answer.status).toBe(200)
    await answer.text()
    const spans = await otel.spansWhere((s) => serverSpan(s) !== undefined)
    const span = serverSpan(spans)
    expect(span?.attributes).toMatchObject({
      'http.response.status_code': 200,
      'hourglass.deadline.outcome': 'expired',
      'error.type': 'DEADLINE_EXCEEDED',
    })
    expect(
      span?.events.find((e) => e.name === 'hourglass.deadline.exceeded')?.attributes,
    ).toMatchObject({
      'hourglass.deadline.action': 'ended',
    })
    expect(span?.status.code).toBe(SpanStatusCode.ERROR)
  })
})
