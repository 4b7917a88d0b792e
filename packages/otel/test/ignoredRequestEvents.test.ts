import { once } from 'node:events'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, diag, propagation, type Span, SpanKind, trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A request instrumentation-http does not trace (its
 * `ignoreIncomingRequestHook`) runs with tracing suppressed, in the context
 * the server started listening in — here inside a `boot` span. Its deadline
 * went on no span, but its retries, skipped retries, llm admission and
 * cooldown events and late writes were still written to "the span active
 * then": the boot span. The same handler on a traced path still puts them on
 * its server span (or, for the late write, on a span of the handler's own).
 */

const otel = setupOtel()
let stop: StopInstrumentation
let uninstrument: () => void = () => {}
let server: Server
let upstream: Server
let base: string
let boot: Span
let closeFetch: () => Promise<void> = async () => {}
// The late-write handler waits for this, opened once its 504 has arrived.
let openGate: () => void = () => {}
let lateWritten: Promise<void> = Promise.resolve()
let wroteLate: () => void = () => {}

beforeAll(async () => {
  trace.setGlobalTracerProvider(otel.tracerProvider)
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  // Before node:http is loaded below: the instrumentation patches it as it is.
  const http = new HttpInstrumentation({
    ignoreIncomingRequestHook: (req) => req.url?.startsWith('/health') === true,
  })
  http.setTracerProvider(otel.tracerProvider)
  uninstrument = () => http.disable()
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
  const { createServer } = await import('node:http')
  const { deadline } = await import('@hourglass/express')
  const { createFetch } = await import('@hourglass/fetch')
  const { llmChannels } = await import('@hourglass/llm')
  const fetch = createFetch()
  closeFetch = () => fetch.close()

  // Always 503: the first attempt is retried (a `retry` event), the second
  // returned (a `retry_skipped` one).
  upstream = createServer((_req, res) => {
    res.statusCode = 503
    res.end('busy')
  })

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void>> = {
    async fetch(_req, res) {
      const answer = await fetch(
        `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/dep`,
        { retry: { statuses: [503] } },
      )
      await answer.text()
      // Published inside the call, as @hourglass/llm's admission and
      // cooldowns are: in the caller's context.
      llmChannels.admission.publish(() => ({
        provider: 'openai',
        keyId: 'k1',
        action: 'wait',
        cause: 'rpm',
        waitMs: 10,
      }))
      llmChannels.cooldown.publish(() => ({
        provider: 'openai',
        keyId: 'k1',
        scope: 'key',
        state: 'start',
        untilMs: Date.now() + 1000,
        reason: 'rate_limited',
      }))
      res.end(String(answer.status))
    },
    async late(req, res) {
      await new Promise<void>((resolve) => {
        openGate = resolve
      })
      // After the deadline's 504: a late write.
      const write = () => {
        res.end('late')
        wroteLate()
      }
      // The traced path writes inside a span of its own, which is where a
      // late write is recorded once the server span has ended.
      if (req.url?.startsWith('/traced'))
        otel.tracer.startActiveSpan('own', (own) => {
          write()
          own.end()
        })
      else write()
    },
  }
  // A fixed reserve, not the adaptive one (10–100 ms, from this process's
  // timer lateness, which a loaded box raises): at 50 ms or more the late
  // route's 50 ms request arrived expired, its 504 sent with no handler run
  // to write late, and the test waited for that write until it timed out (a
  // run saw it so). With 10 the handler runs, in the tick the request
  // arrives in, before its 40 ms can end.
  const hourglass = deadline({ defaultMs: 2000, reserveMs: 10 })
  server = createServer((req, res) => {
    hourglass(req as never, res as never, () => {
      const route = routes[req.url?.split('/').at(-1) ?? '']
      route?.(req, res).catch((error: unknown) => res.destroy(error as Error))
    })
  })
  boot = otel.tracer.startSpan('boot')
  await context.with(trace.setSpan(context.active(), boot), async () => {
    upstream.listen(0, '127.0.0.1')
    server.listen(0, '127.0.0.1')
    await Promise.all([once(upstream, 'listening'), once(server, 'listening')])
  })
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  stop()
  uninstrument()
  await closeFetch()
  for (const s of [server, upstream]) {
    s?.closeAllConnections()
    s?.close()
  }
  diag.disable()
  await otel.shutdown()
})

beforeEach(() => {
  otel.exporter.reset()
})

const eventNames = (span: Span | ReadableSpan) =>
  (span as unknown as ReadableSpan).events.map((e) => e.name)

async function get(path: string, budget = '1500'): Promise<number> {
  const answer = await globalThis.fetch(`${base}${path}`, {
    headers: { 'x-deadline-remaining-ms': budget },
  })
  await answer.text()
  return answer.status
}

/** Calls the late route: waits for its 504, then lets the handler write. */
async function lateWrite(path: string): Promise<void> {
  lateWritten = new Promise((resolve) => {
    wroteLate = resolve
  })
  expect(await get(path, '50')).toBe(504)
  openGate()
  await lateWritten
}

describe('a request instrumentation-http does not trace', () => {
  it('writes its retries, admission and cooldown events on no span: not on the span the server was started in', async () => {
    expect(await get('/health/fetch')).toBe(200)
    expect(boot.isRecording()).toBe(true)
    expect(eventNames(boot)).toEqual([])
  })

  it('writes its late write on no span either', async () => {
    await lateWrite('/health/late')
    expect(boot.isRecording()).toBe(true)
    expect(eventNames(boot)).toEqual([])
  })
})

describe('the same handler on a traced request', () => {
  const serverSpanOf = (path: string) => (spans: ReadableSpan[]) =>
    spans.find((s) => s.kind === SpanKind.SERVER && s.attributes['url.path'] === path)

  it('puts them on its server span', async () => {
    expect(await get('/traced/fetch')).toBe(200)
    const find = serverSpanOf('/traced/fetch')
    const span = find(await otel.spansWhere((s) => find(s) !== undefined)) as ReadableSpan
    expect(eventNames(span)).toEqual([
      'hourglass.deadline.retry',
      'hourglass.deadline.retry_skipped',
      'hourglass.llm.admission',
      'hourglass.llm.cooldown',
    ])
    expect(eventNames(boot)).toEqual([])
  })

  it('puts its late write on the open span of its own', async () => {
    await lateWrite('/traced/late')
    const own = (await otel.spansWhere((s) => s.some((x) => x.name === 'own'))).find(
      (s) => s.name === 'own',
    ) as ReadableSpan
    expect(eventNames(own)).toEqual(['hourglass.deadline.late_write'])
    expect(eventNames(boot)).toEqual([])
  })
})
