import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pipeline, Readable } from 'node:stream'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { instrumentHttpAndUndici, setupOtel } from './helpers/otel.js'

/**
 * A streamed response the deadline cuts short, or one the server destroys
 * with an error mid-body, has already sent its 200, so instrumentation-http
 * leaves the server span's status UNSET: the request failed all the same,
 * and the span has to say so itself.
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
  app.get('/download', (_req, res) => {
    // An upstream body piped on that fails after its first part: pipeline
    // destroys the response with the upstream's error.
    const upstream = new Readable({ read() {} })
    pipeline(upstream, res, () => {})
    upstream.push('first part')
    setImmediate(() =>
      upstream.destroy(Object.assign(new Error('upstream reset'), { code: 'ECONNRESET' })),
    )
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

describe('a streamed response its server destroyed with an error mid-body', () => {
  it('fails the server span (status ERROR, error.type the error code, outcome error): no client left', async () => {
    const answer = await fetch(`${base}/download`)
    expect(answer.status).toBe(200)
    await expect(answer.text()).rejects.toThrow()
    const download = (spans: ReadableSpan[]) =>
      spans.find((s) => s.kind === SpanKind.SERVER && s.attributes['url.path'] === '/download')
    const span = download(await otel.spansWhere((s) => download(s) !== undefined))
    expect(span?.attributes).toMatchObject({
      'http.response.status_code': 200,
      'hourglass.deadline.outcome': 'error',
      'error.type': 'ECONNRESET',
    })
    expect(span?.events.map((e) => e.name)).not.toContain('hourglass.deadline.client_closed')
    expect(span?.status.code).toBe(SpanStatusCode.ERROR)
  })
})
