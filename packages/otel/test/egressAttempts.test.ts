import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { createFetch, fetchChannels } from '@hourglass/fetch'
import { callModel, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { faultServer, reply, startFakeProvider } from '@hourglass/testkit'
import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * Outbound attempts through the real @hourglass/fetch and undici, on a
 * loopback server: what each `deadline.egress` span says must be what
 * happened to that attempt, not to another one in flight beside it.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  await otel.shutdown()
})

describe('egress attempts in flight together', () => {
  it('two identical calls in two traces each get their own status and duration, not the other’s', async () => {
    // The first call is slow and succeeds; the second, sent while the first
    // is still waiting, fails at once. Same method, same URL, no deadline.
    const upstream = await faultServer((_req, i) =>
      i === 0
        ? { type: 'respond', status: 200, body: 'slow', delayMs: 150 }
        : { type: 'respond', status: 503, body: 'fast' },
    )
    const fetch = createFetch({ retry: false })
    try {
      const slow = otel.tracer.startSpan('slow caller')
      const fast = otel.tracer.startSpan('fast caller')
      const first = context.with(trace.setSpan(context.active(), slow), () =>
        fetch(`${upstream.url}/price`).then((r) => r.text()),
      )
      await upstream.request(0)
      // The fast call's own wall time, as this test sees it: its span can
      // take no longer (on a loaded machine it may take more than 100 ms).
      let fastWallMs = Number.NaN
      const sentAt = performance.now()
      const second = context.with(trace.setSpan(context.active(), fast), () =>
        fetch(`${upstream.url}/price`).then(async (r) => {
          const text = await r.text()
          fastWallMs = performance.now() - sentAt
          return text
        }),
      )
      await Promise.all([first, second])
      slow.end()
      fast.end()

      const attempts = otel.exporter
        .getFinishedSpans()
        .filter((s) => s.name === 'deadline.egress GET')
      const under = (parent: typeof slow) => {
        const found = attempts.filter(
          (s) => s.parentSpanContext?.spanId === parent.spanContext().spanId,
        )
        expect(found).toHaveLength(1)
        return found[0]
      }
      const slowAttempt = under(slow)
      const fastAttempt = under(fast)
      expect(slowAttempt?.spanContext().traceId).toBe(slow.spanContext().traceId)
      expect(slowAttempt?.attributes['http.response.status_code']).toBe(200)
      expect(slowAttempt?.attributes).not.toHaveProperty('error.type')
      expect(slowAttempt?.status.code).not.toBe(SpanStatusCode.ERROR)
      expect(slowAttempt?.attributes['hourglass.deadline.elapsed_ms']).toBeGreaterThanOrEqual(100)

      expect(fastAttempt?.spanContext().traceId).toBe(fast.spanContext().traceId)
      expect(fastAttempt?.attributes['http.response.status_code']).toBe(503)
      expect(fastAttempt?.attributes['error.type']).toBe('503')
      expect(fastAttempt?.status.code).toBe(SpanStatusCode.ERROR)
      // Its own duration, not the slow call's (which took 150 ms or more).
      expect(fastAttempt?.attributes['hourglass.deadline.elapsed_ms']).toBeLessThanOrEqual(
        fastWallMs + 1,
      )
    } finally {
      await fetch.close()
      await upstream.close()
    }
  })
})

describe('an attempt answered 4xx', () => {
  it('is an error by its status, as the undici CLIENT span of the same send says: 404 and 429 alike', async () => {
    const statuses = [404, 429, 200]
    const upstream = await faultServer((_req, i) => ({
      type: 'respond',
      status: statuses[i] ?? 200,
      body: 'x',
    }))
    const fetch = createFetch({ retry: false })
    try {
      for (const _ of statuses) await (await fetch(`${upstream.url}/price`)).text()
    } finally {
      await fetch.close()
      await upstream.close()
    }
    const attempts = otel.exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'deadline.egress GET')
      .map((s) => [
        s.attributes['http.response.status_code'],
        s.attributes['error.type'],
        s.status.code,
      ])
    expect(attempts).toEqual([
      [404, '404', SpanStatusCode.ERROR],
      [429, '429', SpanStatusCode.ERROR],
      [200, undefined, SpanStatusCode.UNSET],
    ])
  })
})

describe('what counts as a call that succeeded', () => {
  const SUCCEEDED = 'hourglass.deadline.calls.succeeded'

  it('one call through two redirects: one success, three egress spans telling the hops apart', async () => {
    const upstream = await faultServer((req) =>
      req.url === '/a'
        ? { type: 'respond', status: 302, headers: { location: '/b' } }
        : req.url === '/b'
          ? { type: 'respond', status: 301, headers: { location: '/c' } }
          : { type: 'respond', status: 200, body: 'ok' },
    )
    const fetch = createFetch({ retry: false })
    const deadline = Deadline.after(60_000, { clock: new ManualClock() })
    try {
      const answer = await runWithDeadline(deadline, () => fetch(`${upstream.url}/a`))
      expect(await answer.text()).toBe('ok')
    } finally {
      deadline.dispose()
      await fetch.close()
      await upstream.close()
    }
    const hops = otel.exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'deadline.egress GET')
      .map((s) => [
        s.attributes['url.full'],
        s.attributes['http.response.status_code'],
        s.attributes['hourglass.deadline.attempt'],
        s.attributes['hourglass.deadline.redirect'],
        s.attributes['http.request.resend_count'],
      ])
    expect(hops).toEqual([
      [`${upstream.url}/a`, 302, 1, undefined, undefined],
      [`${upstream.url}/b`, 301, 1, 1, 1],
      [`${upstream.url}/c`, 200, 1, 2, 2],
    ])
    const points = await otel.points(SUCCEEDED)
    expect(points.map((p) => [p.attributes, p.value])).toEqual([
      [{ 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'http' }, 1],
    ])
    // One sample per attempt, not per hop.
    expect((await otel.histogram('hourglass.deadline.egress.remaining')).count).toBe(1)
  })

  it('a model call counts once, as llm, by its attempt on the model that answered', async () => {
    const first = await startFakeProvider({ dialect: 'openai' })
    const backup = await startFakeProvider({ dialect: 'openai' })
    const models = [
      openAICompatible({ baseURL: first.baseURL, apiKey: 'sk-a', model: 'gone' }),
      openAICompatible({ baseURL: backup.baseURL, apiKey: 'sk-b', model: 'backup', name: 'b' }),
    ]
    const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 5 }
    const retry = { delay: { baseDelayMs: 0, maxDelayMs: 0, jitterRatio: 0 } }
    try {
      // A 404 on the first model, answered by the fallback's first attempt…
      first.enqueue(
        reply.error(404, { error: { message: 'no model', type: 'invalid_request_error' } }),
      )
      await callModel({ models, request, retry, limits: { admission: false } })
      // …and a 500 then an answer on one model: its second attempt.
      first.enqueue(reply.error(500, { error: { message: 'boom', type: 'server_error' } }))
      await callModel({ models: [models[0]!], request, retry, limits: { admission: false } })
    } finally {
      await Promise.all([...models.map((m) => m.close?.()), first.close(), backup.close()])
    }
    const points = await otel.points(SUCCEEDED)
    expect(points.map((p) => [p.attributes, p.value])).toEqual([
      [{ 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'llm' }, 1],
      [{ 'hourglass.deadline.attempt': 2, 'hourglass.deadline.call.kind': 'llm' }, 1],
    ])
    // The model's own HTTP attempts are not retried by fetch (the model policy decides): no http decisions either.
    const decisions = await otel.points('hourglass.deadline.retries')
    expect(decisions.map((p) => p.attributes['hourglass.deadline.call.kind'])).not.toContain('http')
  })
})

describe('methods a caller chooses', () => {
  it('a method the HTTP conventions do not know is one `_OTHER` series and span name, not one each', async () => {
    const upstream = await faultServer(() => ({ type: 'respond', status: 200, body: 'ok' }))
    const fetch = createFetch({ retry: false })
    // Methods a proxy passes on from its callers: any token is a method.
    const methods = ['GET', 'PURGE', 'X-SCAN-1', 'X-SCAN-2', 'X-SCAN-3']
    const deadline = Deadline.after(60_000, { clock: new ManualClock() })
    try {
      for (const method of methods) {
        const answer = await runWithDeadline(deadline, () => fetch(upstream.url, { method }))
        await answer.text()
      }
    } finally {
      deadline.dispose()
      await fetch.close()
      await upstream.close()
    }
    const series = (await otel.points('hourglass.deadline.egress.remaining')).map(
      (p) => p.attributes['http.request.method'],
    )
    expect(series.sort()).toEqual(['GET', '_OTHER'])
    expect((await otel.histogram('hourglass.deadline.egress.remaining')).count).toBe(5)
    const spans = otel.exporter
      .getFinishedSpans()
      .filter((s) => s.name.startsWith('deadline.egress '))
      .map((s) => [
        s.name,
        s.attributes['http.request.method'],
        s.attributes['http.request.method_original'],
      ])
    expect(spans).toEqual([
      ['deadline.egress GET', 'GET', undefined],
      ['deadline.egress _OTHER', '_OTHER', 'PURGE'],
      ['deadline.egress _OTHER', '_OTHER', 'X-SCAN-1'],
      ['deadline.egress _OTHER', '_OTHER', 'X-SCAN-2'],
      ['deadline.egress _OTHER', '_OTHER', 'X-SCAN-3'],
    ])
  })
})

describe('a model answer that ended in an error', () => {
  /** One OpenAI-wire stream chunk of DeepSeek's, as its server writes it. */
  const chunk = (choice: object, extra: object = {}) =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'ds', choices: [{ index: 0, ...choice }], ...extra })}\n\n`

  it('after its first token: an ERROR chat span (server_error), a skipped retry, not a success — as the same stream cut by an error frame', async () => {
    const provider = await startFakeProvider({ dialect: 'deepseek' })
    const model = openAICompatible({ baseURL: provider.baseURL, apiKey: 'sk-a', model: 'ds' })
    // A token, then DeepSeek's `insufficient_system_resource`: llm returns
    // what came (finish reason `error`), having nothing to retry it with.
    provider.enqueue(
      reply.error(
        200,
        chunk({ delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }) +
          chunk(
            { delta: {}, finish_reason: 'insufficient_system_resource' },
            { usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } },
          ) +
          'data: [DONE]\n\n',
        { 'content-type': 'text/event-stream' },
      ),
    )
    const caller = otel.tracer.startSpan('caller')
    try {
      const stream = context.with(trace.setSpan(context.active(), caller), () =>
        callModel({
          models: [model],
          request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 5, stream: true },
          limits: { admission: false },
        }),
      )
      for await (const _ of stream) {
        // read to the end
      }
      expect((await stream.result).finishReason).toBe('error')
    } finally {
      caller.end()
      await model.close?.()
      await provider.close()
    }
    const spans = otel.exporter.getFinishedSpans()
    const chat = spans.find((s) => s.name === 'chat ds')
    expect(chat?.attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['error'],
      'gen_ai.usage.output_tokens': 1,
      'hourglass.llm.decision': 'success',
      'error.type': 'server_error',
    })
    expect(chat?.status.code).toBe(SpanStatusCode.ERROR)
    const events = spans.find((s) => s.name === 'caller')?.events
    expect(events?.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.retry_skipped',
        {
          'hourglass.deadline.attempt': 1,
          'hourglass.deadline.retry.reason': 'server_error',
          'hourglass.deadline.retry.why': 'after-first-byte',
        },
      ],
    ])
    expect(await otel.points('hourglass.deadline.calls.succeeded')).toEqual([])
    const decisions = await otel.points('hourglass.deadline.retries')
    expect(decisions.map((p) => [p.attributes, p.value])).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': 'server_error',
          'hourglass.deadline.retry.why': 'after-first-byte',
          'hourglass.deadline.call.kind': 'llm',
        },
        1,
      ],
    ])
  })
})

describe('a retry announced and then abandoned', () => {
  it('is counted as skipped (`aborted`), never as retried: the caller left during its Retry-After wait, nothing was sent again', async () => {
    const upstream = await faultServer(() => ({
      type: 'respond',
      status: 503,
      body: 'busy',
      headers: { 'retry-after': '5' },
    }))
    // A clock nobody moves: the wait ends by the abort alone.
    const fetch = createFetch({ retry: { statuses: [503] }, clock: new ManualClock() })
    const ac = new AbortController()
    // The caller leaves once the retry is announced.
    const onRetry = () => queueMicrotask(() => ac.abort())
    fetchChannels.retry.subscribe(onRetry)
    try {
      const outcome = await fetch(`${upstream.url}/price`, { signal: ac.signal }).then(
        () => 'answered',
        (error: { name?: string }) => error.name,
      )
      expect(outcome).toBe('AbortError')
      expect(upstream.records).toHaveLength(1)
    } finally {
      fetchChannels.retry.unsubscribe(onRetry)
      await fetch.close()
      await upstream.close()
    }
    const decisions = await otel.points('hourglass.deadline.retries')
    expect(decisions.map((p) => [p.attributes, p.value])).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': 'HTTP_503',
          'hourglass.deadline.retry.why': 'aborted',
          'hourglass.deadline.call.kind': 'http',
        },
        1,
      ],
    ])
  })

  it('a retry sent is counted once, as retried', async () => {
    const upstream = await faultServer((_req, i) =>
      i === 0
        ? { type: 'respond', status: 503, body: 'busy' }
        : { type: 'respond', status: 200, body: 'ok' },
    )
    const fetch = createFetch({ retry: { statuses: [503] } })
    try {
      expect(await fetch(`${upstream.url}/price`).then((r) => r.text())).toBe('ok')
    } finally {
      await fetch.close()
      await upstream.close()
    }
    const decisions = await otel.points('hourglass.deadline.retries')
    expect(decisions.map((p) => [p.attributes, p.value])).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'retried',
          'hourglass.deadline.retry.reason': 'HTTP_503',
          'hourglass.deadline.call.kind': 'http',
        },
        1,
      ],
    ])
  })
})
