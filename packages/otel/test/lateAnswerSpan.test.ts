import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { collectDiagWarnings, instrumentHttpAndUndici, setupOtel } from './helpers/otel.js'

/**
 * A handler that answers after its deadline, before the deadline's timer
 * had a turn (a loop kept busy past it): its 200 goes out as written, late.
 * It was reported as an answer in time — no `hourglass.deadline.exceeded`
 * event, outcome `ok`, no error — so a busy service's late answers were
 * missing from its traces and its expiry counter. @hourglass/express now
 * reports it when the response ends (action `late`), while
 * instrumentation-http's server span is still open. The busy loop is a
 * ManualClock whose `now` jumps without running its timers.
 */

const otel = setupOtel()
const warnings: string[] = []
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
let server: Server
let base: string

beforeAll(async () => {
  collectDiagWarnings(warnings)
  // Before express and http are loaded: the instrumentations patch them as they are required.
  uninstrument = instrumentHttpAndUndici(otel.tracerProvider)
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  const express = (await import('express')).default
  const { deadline, deadlineErrors } = await import('@hourglass/express')
  const { createServer } = await import('node:http')
  const clock = new ManualClock()
  const app = express()
  app.use(deadline({ clock, defaultMs: 100, reserveMs: 10 }))
  app.get('/busy', (_req, res) => {
    const at = clock.now()
    clock.now = () => at + 300 // the loop was busy: no timer ran
    res.json({ answer: 42 })
  })
  app.use(deadlineErrors())
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

function serverSpan(spans: ReadableSpan[]): ReadableSpan | undefined {
  return spans.find(
    (s) => s.kind === SpanKind.SERVER && s.attributes['hourglass.deadline.outcome'] !== undefined,
  )
}

it('a late answer is an expiry on the server span (action late), an error, and counted', async () => {
  const before = await otel.counter('hourglass.deadline.exceeded', {
    'hourglass.deadline.stage': 'handler',
  })
  const res = await fetch(`${base}/busy`)
  expect(res.status).toBe(200)
  expect(await res.json()).toEqual({ answer: 42 })
  const span = serverSpan(await otel.spansWhere((spans) => serverSpan(spans) !== undefined))!
  expect(
    span.events.filter((e) => e.name === 'hourglass.deadline.exceeded').map((e) => e.attributes),
  ).toEqual([
    expect.objectContaining({
      'hourglass.deadline.stage': 'handler',
      'hourglass.deadline.action': 'late',
    }),
  ])
  expect(span.attributes['hourglass.deadline.outcome']).toBe('expired')
  expect(span.attributes['http.response.status_code']).toBe(200)
  expect(span.attributes['error.type']).toBe('DEADLINE_EXCEEDED')
  expect(span.status.code).toBe(SpanStatusCode.ERROR)
  expect(
    await otel.counter('hourglass.deadline.exceeded', { 'hourglass.deadline.stage': 'handler' }),
  ).toBe(before + 1)
  // Written while the span was open: nothing dropped on an ended span.
  expect(warnings).toEqual([])
})
