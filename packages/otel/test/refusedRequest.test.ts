import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { diag, SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { collectDiagWarnings, instrumentHttpAndUndici, setupOtel } from './helpers/otel.js'

/**
 * `deadline({ strict: true })` answers a malformed deadline header 400 before
 * the chain runs. The request still publishes its start and end, so its
 * server span says why it failed: the header as an event, outcome refused.
 */

const otel = setupOtel()
const warnings: string[] = []
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
let server: Server
let base: string
let handled = 0

beforeAll(async () => {
  collectDiagWarnings(warnings)
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
  app.use(deadline({ strict: true, defaultMs: 2000 }))
  app.get('/quote', (_req, res) => {
    handled++
    res.json({ ok: true })
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
  diag.disable()
})

const serverSpan = (spans: ReadableSpan[]) => spans.find((s) => s.kind === SpanKind.SERVER)

describe('a request strict refuses for a malformed deadline header', () => {
  it('has its server span: the header as an invalid_header event, outcome refused, status 400', async () => {
    const answer = await fetch(`${base}/quote`, { headers: { 'x-deadline-remaining-ms': 'soon' } })
    expect(answer.status).toBe(400)
    await answer.json()
    const spans = await otel.spansWhere((s) => serverSpan(s) !== undefined)
    const span = serverSpan(spans)
    expect(handled).toBe(0)
    expect(span?.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.invalid_header',
        {
          'hourglass.deadline.invalid_header.name': 'x-deadline-remaining-ms',
          'hourglass.deadline.invalid_header.reason': expect.any(String),
        },
      ],
    ])
    expect(span?.attributes).toMatchObject({
      'http.response.status_code': 400,
      'hourglass.deadline.budget_ms': 2000,
      'hourglass.deadline.source': 'default',
      'hourglass.deadline.outcome': 'refused',
    })
    expect(span?.attributes['hourglass.deadline.elapsed_ms']).toBeTypeOf('number')
    // The fallback budget is named as such (source default); none of it was left to spend.
    expect(span?.attributes).not.toHaveProperty('hourglass.deadline.remaining_ms')
    // The caller's mistake, not the server's: a 4xx leaves a server span UNSET.
    expect(span?.status.code).toBe(SpanStatusCode.UNSET)
    expect(span?.attributes).not.toHaveProperty('error.type')
    expect(warnings.filter((w) => /ended Span/i.test(w))).toEqual([])
  })
})
