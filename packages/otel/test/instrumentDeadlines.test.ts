import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  coreChannels,
  Deadline,
  type HourglassChannel,
  ManualClock,
  runWithRequestId,
} from '@hourglass/core'
import {
  deadline as deadlineMiddleware,
  expressChannels,
  type IngressStartMessage,
  reportExpired,
} from '@hourglass/express'
import {
  type EgressAttemptEndMessage,
  type EgressAttemptMessage,
  fetchChannels,
} from '@hourglass/fetch'
import { Admission, type LlmAttemptMessage, llmChannels } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, ROOT_CONTEXT, type Span, SpanStatusCode, trace } from '@opentelemetry/api'
import express from 'express'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel, spanNamed } from './helpers/otel.js'

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let clock: ManualClock
// Instrumentations a test starts besides `stop`'s: stopped after it even when
// an assertion fails first, so no subscription outlives the file.
const started: StopInstrumentation[] = []

beforeEach(() => {
  otel = setupOtel()
  clock = new ManualClock()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  for (const s of started.splice(0)) s()
  stop()
  await otel.shutdown()
})

/** Publish as the package would, with the message type its channel declares. */
const publish = <T>(channel: HourglassChannel<T>, message: T) => channel.publish(() => message)

/** Run `fn` with a fresh span active, as instrumentation-http does for a request. */
function inSpan<T>(name: string, fn: (span: Span) => T): T {
  const span = otel.tracer.startSpan(name)
  return context.with(trace.setSpan(context.active(), span), () => fn(span))
}

function ingressStart(deadline: Deadline, budgetMs: number): IngressStartMessage {
  return {
    deadline,
    req: {},
    budgetMs,
    source: 'x-deadline-remaining-ms',
    clamped: false,
    mode: 'enforce',
    refused: false,
  }
}

describe('instrumentDeadlines: ingress', () => {
  it('describes the request deadline on the span active when it starts (the server span)', async () => {
    const deadline = Deadline.after(800, { clock })
    clock.advance(3)
    inSpan('GET /quote', (span) => {
      publish(expressChannels.start, ingressStart(deadline, 800))
      span.end()
    })
    const server = spanNamed(otel.exporter.getFinishedSpans(), 'GET /quote')
    expect(server.attributes).toMatchObject({
      'hourglass.deadline.budget_ms': 800,
      'hourglass.deadline.remaining_ms': 797,
      'hourglass.deadline.source': 'x-deadline-remaining-ms',
      'hourglass.deadline.clamped': false,
      'hourglass.deadline.mode': 'enforce',
    })
    expect(await otel.histogram('hourglass.deadline.ingress.remaining')).toEqual({
      count: 1,
      min: 0.797,
      max: 0.797,
    })
  })

  it('puts the request id a server set (core runWithRequestId) on the server span and on every span started inside', () => {
    const deadline = Deadline.after(800, { clock })
    runWithRequestId('req-77', () =>
      inSpan('POST /v1/chat/completions', (span) => {
        publish(expressChannels.start, ingressStart(deadline, 800))
        publish(coreChannels.sliceStart, { deadline, slice: 'model', allottedMs: 500 })
        publish(coreChannels.sliceEnd, {
          deadline,
          slice: 'model',
          allottedMs: 500,
          usedMs: 10,
          outcome: 'ok',
        })
        span.end()
      }),
    )
    // Outside any request: no id.
    inSpan('GET /other', (span) => {
      publish(expressChannels.start, ingressStart(Deadline.after(800, { clock }), 800))
      span.end()
    })
    const spans = otel.exporter.getFinishedSpans()
    expect(spanNamed(spans, 'POST /v1/chat/completions').attributes['hourglass.request_id']).toBe(
      'req-77',
    )
    expect(spanNamed(spans, 'deadline.slice model').attributes['hourglass.request_id']).toBe(
      'req-77',
    )
    expect(spanNamed(spans, 'GET /other').attributes['hourglass.request_id']).toBeUndefined()
  })

  it('puts a later expiry on the request span even when it fires outside its context', async () => {
    const deadline = Deadline.after(100, { clock })
    const server = inSpan('GET /slow', (span) => {
      publish(expressChannels.start, ingressStart(deadline, 100))
      return span
    })
    // Timers and socket callbacks: the active context is not the request's.
    context.with(ROOT_CONTEXT, () => {
      publish(expressChannels.expire, {
        deadline,
        req: {},
        budgetMs: 100,
        elapsedMs: 100,
        slice: 'model',
        stage: 'handler',
        action: '504',
      })
      publish(expressChannels.end, {
        deadline,
        req: {},
        statusCode: 504,
        elapsedMs: 101,
        outcome: 'expired',
      })
    })
    server.end()
    const span = spanNamed(otel.exporter.getFinishedSpans(), 'GET /slow')
    expect(span.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.exceeded',
        {
          'hourglass.deadline.stage': 'handler',
          'hourglass.deadline.slice': 'model',
          'hourglass.deadline.budget_ms': 100,
          'hourglass.deadline.elapsed_ms': 100,
          'hourglass.deadline.action': '504',
        },
      ],
    ])
    expect(span.attributes).toMatchObject({
      'error.type': 'DEADLINE_EXCEEDED',
      'hourglass.deadline.outcome': 'expired',
      'hourglass.deadline.elapsed_ms': 101,
    })
    expect(
      await otel.counter('hourglass.deadline.exceeded', { 'hourglass.deadline.stage': 'handler' }),
    ).toBe(1)
  })

  it('arrival with no time left counts at the arrival stage; dark mode is not an error', async () => {
    const deadline = Deadline.after(0, { clock, observe: true })
    inSpan('GET /late', (span) => {
      publish(expressChannels.start, { ...ingressStart(deadline, 0), mode: 'observe' })
      publish(expressChannels.expire, {
        deadline,
        req: {},
        budgetMs: 0,
        elapsedMs: 0,
        stage: 'arrival',
        action: 'observed',
      })
      span.end()
    })
    const span = spanNamed(otel.exporter.getFinishedSpans(), 'GET /late')
    expect(span.events[0]?.attributes).toMatchObject({ 'hourglass.deadline.stage': 'arrival' })
    expect(span.attributes).not.toHaveProperty('error.type')
    expect(
      await otel.counter('hourglass.deadline.exceeded', { 'hourglass.deadline.stage': 'arrival' }),
    ).toBe(1)
  })

  it('leaves a request strict refuses out of the ingress remaining histogram: it never ran, and its budget is only the fallback defaultMs', async () => {
    const app = express()
    app.use(deadlineMiddleware({ strict: true, defaultMs: 2000, reserveMs: 0, clock }))
    app.get('/', (_req, res) => {
      res.json({ ok: true })
    })
    const server = createServer(app)
    server.listen(0, '127.0.0.1')
    try {
      await once(server, 'listening')
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
      const refused = await fetch(url, { headers: { 'x-deadline-remaining-ms': 'soon' } })
      expect(refused.status).toBe(400)
      await refused.body?.cancel()
      const served = await fetch(url, { headers: { 'x-deadline-remaining-ms': '800' } })
      expect(served.status).toBe(200)
      await served.json()
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    expect(await otel.histogram('hourglass.deadline.ingress.remaining')).toEqual({
      count: 1,
      min: 0.8,
      max: 0.8,
    })
  })

  it('fails the request span of a response the server destroyed with an error mid-body (outcome error), its 2xx notwithstanding', async () => {
    const deadline = Deadline.after(1000, { clock })
    const failure = Object.assign(new Error('upstream broke'), { code: 'ECONNRESET' })
    inSpan('GET /download', (span) => {
      publish(expressChannels.start, ingressStart(deadline, 1000))
      context.with(ROOT_CONTEXT, () =>
        publish(expressChannels.end, {
          deadline,
          req: {},
          statusCode: 200,
          elapsedMs: 40,
          outcome: 'error',
          error: failure,
        }),
      )
      span.end()
    })
    const span = spanNamed(otel.exporter.getFinishedSpans(), 'GET /download')
    expect(span.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'error',
      'error.type': 'ECONNRESET',
    })
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
    expect(span.events).toEqual([])
    expect(await otel.counter('hourglass.deadline.client_closed')).toBe(0)
  })

  it('records a caller that left as an event on its request span and in a counter', async () => {
    const deadline = Deadline.after(1000, { clock })
    inSpan('POST /chat', (span) => {
      publish(expressChannels.start, ingressStart(deadline, 1000))
      context.with(ROOT_CONTEXT, () =>
        publish(expressChannels.clientClosed, { deadline, req: {}, elapsedMs: 250 }),
      )
      span.end()
    })
    const span = spanNamed(otel.exporter.getFinishedSpans(), 'POST /chat')
    expect(span.events.map((e) => [e.name, e.attributes])).toEqual([
      ['hourglass.deadline.client_closed', { 'hourglass.deadline.elapsed_ms': 250 }],
    ])
    expect(await otel.counter('hourglass.deadline.client_closed')).toBe(1)
  })

  it("marks a request the app answered its deadline for itself (reportExpired): the stream's 200 notwithstanding", async () => {
    const app = express()
    app.use(deadlineMiddleware({ defaultMs: 2000, clock }))
    app.get('/', (req, res) => {
      // The app's own deadline ran out mid-stream: its error event, then the end.
      res.setHeader('content-type', 'text/event-stream')
      res.write('data: {"error":{"code":"deadline_exceeded"}}\n\n')
      reportExpired(req)
      res.end()
    })
    // As instrumentation-http does: a server span active around the app, ended on 'close'.
    const server = createServer((req, res) =>
      inSpan('GET /stream', (span) => {
        res.on('close', () => span.end())
        app(req, res)
      }),
    )
    server.listen(0, '127.0.0.1')
    try {
      await once(server, 'listening')
      const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
      expect(answer.status).toBe(200)
      await answer.text()
      await otel.spansWhere((spans) => spans.some((s) => s.name === 'GET /stream'))
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    const span = spanNamed(otel.exporter.getFinishedSpans(), 'GET /stream')
    expect(span.events.map((e) => [e.name, e.attributes?.['hourglass.deadline.action']])).toEqual([
      ['hourglass.deadline.exceeded', 'app'],
    ])
    expect(span.attributes).toMatchObject({
      'error.type': 'DEADLINE_EXCEEDED',
      'hourglass.deadline.outcome': 'expired',
    })
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
    expect(
      await otel.counter('hourglass.deadline.exceeded', { 'hourglass.deadline.stage': 'handler' }),
    ).toBe(1)
  })
})

describe('instrumentDeadlines: slices', () => {
  it('makes each slice a child span with its allotted and used ms, as the plan reports them', async () => {
    const deadline = Deadline.after(1010, { clock })
    const plan = deadline.plan({ preprocess: 1, model: 3 }, { reserveMs: 10 })
    await inSpan('POST /answer', async (server) => {
      const step = plan.run('preprocess', () => new Promise((r) => setImmediate(r)))
      clock.advance(40)
      await step
      server.end()
    })
    const [row] = plan.report()
    const spans = otel.exporter.getFinishedSpans()
    const slice = spanNamed(spans, 'deadline.slice preprocess')
    const server = spanNamed(spans, 'POST /answer')
    expect(row).toEqual({ name: 'preprocess', allottedMs: 250, usedMs: 40, outcome: 'ok' })
    expect(slice.parentSpanContext?.spanId).toBe(server.spanContext().spanId)
    expect(slice.attributes).toEqual({
      'hourglass.deadline.slice': 'preprocess',
      'hourglass.deadline.slice.allotted_ms': 250,
      'hourglass.deadline.slice.used_ms': 40,
      'hourglass.deadline.slice.outcome': 'ok',
    })
    expect(slice.status.code).toBe(SpanStatusCode.UNSET)
  })

  it('marks a slice that ran out as an error with a deadline.exceeded event, and counts it', async () => {
    const plan = Deadline.after(110, { clock }).plan({ model: 1 }, { reserveMs: 10 })
    const running = plan.run('model', () => new Promise(() => {}))
    clock.advance(100)
    await expect(running).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'model' })
    const slice = spanNamed(otel.exporter.getFinishedSpans(), 'deadline.slice model')
    expect(slice.status).toEqual({ code: SpanStatusCode.ERROR, message: 'slice "model" ran out' })
    expect(slice.attributes).toMatchObject({
      'error.type': 'DEADLINE_EXCEEDED',
      'hourglass.deadline.slice.allotted_ms': 100,
      'hourglass.deadline.slice.used_ms': 100,
      'hourglass.deadline.slice.outcome': 'exceeded',
    })
    expect(slice.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.exceeded',
        {
          'hourglass.deadline.stage': 'slice',
          'hourglass.deadline.slice': 'model',
          'hourglass.deadline.slice.allotted_ms': 100,
          'hourglass.deadline.slice.used_ms': 100,
        },
      ],
    ])
    expect(
      await otel.counter('hourglass.deadline.exceeded', {
        'hourglass.deadline.stage': 'slice',
        'hourglass.deadline.slice': 'model',
      }),
    ).toBe(1)
  })

  it('gives a dark-mode slice that ran over an observed deadline.exceeded event, no error status, and counts it', async () => {
    const plan = Deadline.after(110, { clock, observe: true }).plan({ model: 1 }, { reserveMs: 10 })
    const step = plan.run('model', () => new Promise((r) => setImmediate(r)))
    clock.advance(150)
    await step
    const slice = spanNamed(otel.exporter.getFinishedSpans(), 'deadline.slice model')
    expect(slice.status.code).toBe(SpanStatusCode.UNSET)
    expect(slice.attributes['hourglass.deadline.slice.outcome']).toBe('observed')
    expect(slice.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.exceeded',
        {
          'hourglass.deadline.stage': 'slice',
          'hourglass.deadline.slice': 'model',
          'hourglass.deadline.slice.allotted_ms': 100,
          'hourglass.deadline.slice.used_ms': 150,
          'hourglass.deadline.action': 'observed',
        },
      ],
    ])
    expect(
      await otel.counter('hourglass.deadline.exceeded', {
        'hourglass.deadline.stage': 'slice',
        'hourglass.deadline.slice': 'model',
      }),
    ).toBe(1)
  })

  it('gives a slice that failed for another reason its error code as error.type', async () => {
    const plan = Deadline.after(100, { clock }).plan({ parse: 1 })
    const failure = Object.assign(new Error('bad json'), { code: 'BAD_JSON' })
    await expect(plan.run('parse', () => Promise.reject(failure))).rejects.toBe(failure)
    const slice = spanNamed(otel.exporter.getFinishedSpans(), 'deadline.slice parse')
    expect(slice.status.code).toBe(SpanStatusCode.ERROR)
    expect(slice.attributes['error.type']).toBe('BAD_JSON')
    expect(await otel.counter('hourglass.deadline.exceeded')).toBe(0)
  })
})

// Attempt n under a deadline: the same handle in its start and end messages, as fetch publishes them.
const handles = new WeakMap<Deadline, Map<number, object>>()
function handleOf(deadline: Deadline, n: number): object {
  let byNumber = handles.get(deadline)
  if (byNumber === undefined) {
    byNumber = new Map()
    handles.set(deadline, byNumber)
  }
  let handle = byNumber.get(n)
  if (handle === undefined) {
    handle = {}
    byNumber.set(n, handle)
  }
  return handle
}

function attempt(deadline: Deadline, n: number): EgressAttemptMessage {
  return {
    handle: handleOf(deadline, n),
    deadline,
    method: 'GET',
    url: 'http://127.0.0.1:9/price',
    attempt: n,
    remainingMs: deadline.remaining(),
    headerMs: Math.floor(deadline.remaining()),
  }
}

function attemptEnd(
  deadline: Deadline,
  n: number,
  rest: Partial<EgressAttemptEndMessage>,
): EgressAttemptEndMessage {
  return {
    handle: handleOf(deadline, n),
    deadline,
    method: 'GET',
    url: 'http://127.0.0.1:9/price',
    attempt: n,
    elapsedMs: 12,
    bytesReceived: 0,
    ...rest,
  }
}

describe('instrumentDeadlines: egress', () => {
  it('gives each attempt a span with the budget sent, resend count and failure, and a retry event between', async () => {
    const deadline = Deadline.after(600, { clock })
    inSpan('GET /checkout', (server) => {
      publish(fetchChannels.attempt, attempt(deadline, 1))
      clock.advance(30)
      publish(
        fetchChannels.attemptEnd,
        attemptEnd(deadline, 1, { errorCode: 'CONNECT_TIMEOUT', phase: 'connect' }),
      )
      publish(fetchChannels.retry, {
        deadline,
        method: 'GET',
        url: 'http://127.0.0.1:9/price',
        attempt: 2,
        reason: 'CONNECT_TIMEOUT',
        delayMs: 20,
      })
      clock.advance(20)
      // A retry is counted when it is sent: its attempt names its reason.
      publish(fetchChannels.attempt, { ...attempt(deadline, 2), retryReason: 'CONNECT_TIMEOUT' })
      publish(
        fetchChannels.attemptEnd,
        attemptEnd(deadline, 2, { statusCode: 200, bytesReceived: 17 }),
      )
      server.end()
    })
    const spans = otel.exporter.getFinishedSpans()
    const server = spanNamed(spans, 'GET /checkout')
    const attempts = spans.filter((s) => s.name === 'deadline.egress GET')
    expect(attempts.map((s) => s.parentSpanContext?.spanId)).toEqual([
      server.spanContext().spanId,
      server.spanContext().spanId,
    ])
    expect(attempts[0]?.attributes).toMatchObject({
      'hourglass.deadline.attempt': 1,
      'hourglass.deadline.remaining_ms': 600,
      'hourglass.deadline.header_ms': 600,
      'error.type': 'CONNECT_TIMEOUT',
      'hourglass.deadline.phase': 'connect',
    })
    expect(attempts[0]?.attributes).not.toHaveProperty('http.request.resend_count')
    expect(attempts[0]?.status.code).toBe(SpanStatusCode.ERROR)
    expect(attempts[1]?.attributes).toMatchObject({
      'hourglass.deadline.attempt': 2,
      'http.request.resend_count': 1,
      'hourglass.deadline.remaining_ms': 550,
      'http.response.status_code': 200,
    })
    expect(attempts[1]?.attributes).not.toHaveProperty('error.type')
    expect(server.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.retry',
        {
          'hourglass.deadline.attempt': 2,
          'hourglass.deadline.retry.reason': 'CONNECT_TIMEOUT',
          'hourglass.deadline.retry.delay_ms': 20,
        },
      ],
    ])
    expect(await otel.histogram('hourglass.deadline.egress.remaining')).toEqual({
      count: 2,
      min: 0.55,
      max: 0.6,
    })
    expect(
      await otel.counter('hourglass.deadline.retries', {
        'hourglass.deadline.retry.outcome': 'retried',
      }),
    ).toBe(1)
    expect(
      await otel.counter('hourglass.deadline.calls.succeeded', { 'hourglass.deadline.attempt': 2 }),
    ).toBe(1)
    expect(
      await otel.counter('hourglass.deadline.calls.succeeded', { 'hourglass.deadline.attempt': 1 }),
    ).toBe(0)
  })

  it('records a skipped retry and why; an upstream deadline counts at the upstream stage', async () => {
    const deadline = Deadline.after(600, { clock })
    inSpan('GET /checkout', (server) => {
      publish(fetchChannels.attempt, attempt(deadline, 1))
      publish(
        fetchChannels.attemptEnd,
        attemptEnd(deadline, 1, { statusCode: 504, upstreamDeadline: true }),
      )
      publish(fetchChannels.retrySkipped, {
        deadline,
        method: 'GET',
        url: 'http://127.0.0.1:9/price',
        attempt: 1,
        reason: 'HTTP_504',
        why: 'upstream-deadline',
      })
      server.end()
    })
    const spans = otel.exporter.getFinishedSpans()
    expect(spanNamed(spans, 'deadline.egress GET').attributes['error.type']).toBe('504')
    expect(spanNamed(spans, 'GET /checkout').events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.retry_skipped',
        {
          'hourglass.deadline.attempt': 1,
          'hourglass.deadline.retry.reason': 'HTTP_504',
          'hourglass.deadline.retry.why': 'upstream-deadline',
        },
      ],
    ])
    expect(
      await otel.counter('hourglass.deadline.retries', {
        'hourglass.deadline.retry.outcome': 'skipped',
        'hourglass.deadline.retry.why': 'upstream-deadline',
      }),
    ).toBe(1)
    expect(
      await otel.counter('hourglass.deadline.exceeded', { 'hourglass.deadline.stage': 'upstream' }),
    ).toBe(1)
    expect(await otel.counter('hourglass.deadline.calls.succeeded')).toBe(0)
  })

  it('counts model calls by the attempt that succeeded, from hourglass:llm:attempt', async () => {
    const llm = (n: number, decision: LlmAttemptMessage['decision']): LlmAttemptMessage => ({
      deadline: undefined,
      attempt: n,
      model: 'small',
      provider: 'fake',
      latencyMs: 5,
      decision,
      costUsd: 0,
      ...(decision === 'retry' ? { status: 429, errorKind: 'rate_limited', delayMs: 100 } : {}),
    })
    inSpan('POST /chat', (server) => {
      publish(llmChannels.attempt, llm(1, 'retry'))
      // The retry, sent: llm names the failure it was for (a decision alone counts no retry).
      publish(llmChannels.attempt, { ...llm(2, 'success'), retryReason: 'rate_limited' })
      publish(llmChannels.attempt, llm(1, 'success'))
      server.end()
    })
    const server = spanNamed(otel.exporter.getFinishedSpans(), 'POST /chat')
    expect(server.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.retry',
        {
          'hourglass.deadline.attempt': 2,
          'hourglass.deadline.retry.reason': 'rate_limited',
          'hourglass.deadline.retry.delay_ms': 100,
        },
      ],
    ])
    const kind = { 'hourglass.deadline.call.kind': 'llm' }
    expect(
      await otel.counter('hourglass.deadline.calls.succeeded', {
        ...kind,
        'hourglass.deadline.attempt': 1,
      }),
    ).toBe(1)
    expect(
      await otel.counter('hourglass.deadline.calls.succeeded', {
        ...kind,
        'hourglass.deadline.attempt': 2,
      }),
    ).toBe(1)
    expect(await otel.counter('hourglass.deadline.retries', kind)).toBe(1)
  })
})

describe('instrumentDeadlines: llm admission and cooldowns', () => {
  it('puts admission decisions and cooldowns on the span active when llm publishes them', () => {
    inSpan('POST /v1/chat/completions', (span) => {
      publish(llmChannels.cooldown, {
        provider: 'gemini',
        keyId: 'k1a2',
        scope: 'model',
        model: 'gemini-2.5-flash',
        state: 'start',
        untilMs: Date.now() + 60_000,
        reason: 'rate_limited',
      })
      publish(llmChannels.admission, {
        provider: 'gemini',
        keyId: 'k1a2',
        action: 'wait',
        cause: 'cooldown',
        waitMs: 1200,
      })
      publish(llmChannels.cooldown, {
        provider: 'gemini',
        keyId: '*',
        scope: 'provider',
        state: 'end',
        untilMs: 0,
        reason: 'overloaded',
      })
      span.end()
    })
    // Outside any span (a cooldown that ends on its own): recorded nowhere, and no error.
    publish(llmChannels.admission, {
      provider: 'p',
      keyId: 'k',
      action: 'fail',
      cause: 'rpm',
      waitMs: 0,
    })
    const span = spanNamed(otel.exporter.getFinishedSpans(), 'POST /v1/chat/completions')
    expect(span.events.map((e) => e.name)).toEqual([
      'hourglass.llm.cooldown',
      'hourglass.llm.admission',
      'hourglass.llm.cooldown',
    ])
    const [start, admission, end] = span.events.map((e) => e.attributes ?? {})
    expect(start).toMatchObject({
      'gen_ai.provider.name': 'gcp.gemini',
      'gen_ai.request.model': 'gemini-2.5-flash',
      'hourglass.llm.key_id': 'k1a2',
      'hourglass.llm.cooldown.scope': 'model',
      'hourglass.llm.cooldown.state': 'start',
      'hourglass.llm.cooldown.reason': 'rate_limited',
    })
    expect(start?.['hourglass.llm.cooldown.duration_ms']).toBeGreaterThan(59_000)
    expect(admission).toEqual({
      'gen_ai.provider.name': 'gcp.gemini',
      'hourglass.llm.provider': 'gemini',
      'hourglass.llm.key_id': 'k1a2',
      'hourglass.llm.admission.action': 'wait',
      'hourglass.llm.admission.cause': 'cooldown',
      'hourglass.llm.admission.wait_ms': 1200,
    })
    expect(end).toEqual({
      'gen_ai.provider.name': 'gcp.gemini',
      'hourglass.llm.provider': 'gemini',
      'hourglass.llm.key_id': '*',
      'hourglass.llm.cooldown.scope': 'provider',
      'hourglass.llm.cooldown.state': 'end',
      'hourglass.llm.cooldown.reason': 'overloaded',
    })
  })

  it('leaves gen_ai.request.model off a cooldown whose model is blank (an adapter of yours with model "")', () => {
    inSpan('POST /v1/chat/completions', (span) => {
      publish(llmChannels.cooldown, {
        provider: 'acme',
        keyId: 'k1a2',
        scope: 'model',
        model: '',
        state: 'end',
        untilMs: 0,
        reason: 'rate_limited',
      })
      span.end()
    })
    const span = spanNamed(otel.exporter.getFinishedSpans(), 'POST /v1/chat/completions')
    expect(span.events[0]?.attributes).not.toHaveProperty('gen_ai.request.model')
  })

  it("gives a cooldown's duration on the admission's clocks, not the host's: a wall clock set apart still reads the Retry-After", async () => {
    const clock = new ManualClock(1000)
    // An hour ahead of the host, and a fixed epoch: the event read 3,601,000 and 0 ms.
    for (const wallClock of [() => Date.now() + 3_600_000, () => 1_700_000_000_000 + clock.now()]) {
      const gate = new Admission({ clock, wallClock, logger: { warn: () => {} } })
      const span = otel.tracer.startSpan('POST /v1/chat/completions')
      await context.with(trace.setSpan(context.active(), span), () =>
        gate.report('acme', 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA', {
          ok: false,
          error: { kind: 'rate_limited', status: 429, retryAfterMs: 1000 },
        } as never),
      )
      span.end()
    }
    const durations = otel.exporter
      .getFinishedSpans()
      .map((s) => s.events[0]?.attributes?.['hourglass.llm.cooldown.duration_ms'])
    expect(durations).toEqual([1000, 1000])
  })
})

describe('instrumentDeadlines: cost and safety', () => {
  const allChannels = [coreChannels, expressChannels, fetchChannels, llmChannels].flatMap((group) =>
    Object.values(group),
  )
  const subscribed = () => allChannels.filter((c) => c.hasSubscribers).map((c) => c.name)

  it('leaves every Hourglass channel without subscribers until called, and again after stop()', () => {
    stop()
    expect(subscribed()).toEqual([])
    const again = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
    started.push(again)
    expect(subscribed()).toEqual([
      'hourglass:slice:start',
      'hourglass:slice:end',
      'hourglass:ingress:start',
      'hourglass:ingress:invalid-header',
      'hourglass:ingress:expire',
      'hourglass:ingress:client-closed',
      'hourglass:ingress:late-write',
      'hourglass:ingress:end',
      'hourglass:egress:attempt',
      'hourglass:egress:attempt-end',
      'hourglass:egress:retry',
      'hourglass:egress:retry-skipped',
      'hourglass:llm:attempt',
      'hourglass:llm:retry-skipped',
      'hourglass:llm:cooldown',
      'hourglass:llm:admission',
    ])
    again()
    again()
    expect(subscribed()).toEqual([])
  })

  it('stops producing spans once stopped', async () => {
    stop()
    const plan = Deadline.after(100, { clock }).plan({ a: 1 })
    await plan.run('a', () => 'done')
    expect(otel.exporter.getFinishedSpans()).toEqual([])
  })

  it('never lets a failing tracer break the work it observes', async () => {
    stop()
    const throwing = {
      getTracer: () => ({
        startSpan: () => {
          throw new Error('exporter on fire')
        },
        startActiveSpan: () => {
          throw new Error('exporter on fire')
        },
      }),
    }
    const stopBroken = instrumentDeadlines({ tracerProvider: throwing })
    const uncaught: unknown[] = []
    const onUncaught = (e: unknown) => uncaught.push(e)
    process.on('uncaughtException', onUncaught)
    try {
      const plan = Deadline.after(100, { clock }).plan({ a: 1 })
      await expect(plan.run('a', () => 'still works')).resolves.toBe('still works')
      await new Promise((r) => setImmediate(r))
      expect(uncaught).toEqual([])
    } finally {
      process.off('uncaughtException', onUncaught)
      stopBroken()
    }
  })
})
