import { once } from 'node:events'
import { type ClientRequest, createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { deadline, deadlineErrors } from '@hourglass/express'
import { createFetch, fetchChannels, type HourglassFetch } from '@hourglass/fetch'
import { callModel, type ModelAdapter, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FakeProvider, faultServer, reply, startFakeProvider } from '@hourglass/testkit'
import { context, SpanKind, trace } from '@opentelemetry/api'
import { RPCType, setRPCMetadata } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import express from 'express'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A request the deadline cuts short (its 504) while an outbound call runs:
 * the server span is held open until the call's attempt span has ended
 * (`OpenWork`). What the call decides about that attempt comes a few
 * microtasks after its end, in the same turn — fetch's `retry_skipped`
 * (`no-budget`), @hourglass/llm's record of the model attempt (its `chat`
 * span and its `retry_skipped`) —, and found the server span already ended:
 * the event counted in `hourglass.deadline.retries` was missing from the
 * trace, and the `chat` span ended after its parent. So did a retry
 * abandoned during its `Retry-After` wait when the client left (no attempt
 * span open then): its `retry_skipped` (`aborted`) was lost, and the
 * `retry` event before it stood alone, read as a retry made.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const cleanups: Array<() => unknown> = []

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await otel.shutdown()
})

/**
 * Serves `app` with a server span of the test's own, set as the request's
 * RPC metadata as instrumentation-http does (the README's snippet), ended on
 * the response's 'close' after @hourglass/express has heard it. Sends one
 * request with `budgetMs` (`leave` destroys it when it likes); resolves with
 * its status (0 for one that left) once the server span is exported.
 */
async function serveOnce(
  app: express.Express,
  budgetMs: number,
  leave?: (req: ClientRequest) => Promise<void>,
) {
  const server: Server = createServer((req, res) => {
    const span = otel.tracer.startSpan('server', { kind: SpanKind.SERVER })
    const ctx = setRPCMetadata(trace.setSpan(context.active(), span), {
      type: RPCType.HTTP,
      span,
    })
    context.with(ctx, () => app(req, res))
    res.on('close', () => span.end())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  cleanups.push(() => {
    server.closeAllConnections()
    server.close()
  })
  const { port } = server.address() as AddressInfo
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/', headers: { 'x-deadline-remaining-ms': `${budgetMs}` } },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.end()
    if (leave === undefined) req.on('error', reject)
    else {
      req.on('error', () => resolve(0))
      leave(req).catch(reject)
    }
  })
  const spans = await otel.spansWhere((all) => all.some((s) => s.name === 'server'))
  return { status, spans, server: spans.find((s) => s.name === 'server') as ReadableSpan }
}

const eventsNamed = (span: ReadableSpan, name: string) =>
  span.events.filter((e) => e.name === name).map((e) => e.attributes)

/** Index in export order: a span exported before its parent ended before it. */
const exportedAt = (spans: ReadableSpan[], name: string) => spans.findIndex((s) => s.name === name)

it('fetch: the retry given up for want of budget is on the server span, as in the retries count', async () => {
  // A 503 (retried), then no answer: the deadline ends the second attempt.
  const upstream = await faultServer((_req, i) =>
    i === 0 ? { type: 'respond', status: 503, body: 'busy' } : { type: 'hang' },
  )
  cleanups.push(() => upstream.close())
  const fetch: HourglassFetch = createFetch({ retry: { statuses: [503] } })
  cleanups.push(() => fetch.close())
  const app = express()
  app.use(deadline({ reserveMs: 10 }))
  app.get('/', async (_req, res, next) => {
    try {
      const answer = await fetch(`${upstream.url}/price`)
      res.status(answer.status).send(await answer.text())
    } catch (error) {
      next(error)
    }
  })
  app.use(deadlineErrors())

  const { status, server } = await serveOnce(app, 500)
  expect(status).toBe(504)
  expect(server.attributes['hourglass.deadline.outcome']).toBe('expired')
  expect(eventsNamed(server, 'hourglass.deadline.retry')).toEqual([
    expect.objectContaining({
      'hourglass.deadline.attempt': 2,
      'hourglass.deadline.retry.reason': 'HTTP_503',
    }),
  ])
  expect(eventsNamed(server, 'hourglass.deadline.retry_skipped')).toEqual([
    {
      'hourglass.deadline.attempt': 2,
      'hourglass.deadline.retry.reason': 'DEADLINE_EXCEEDED',
      'hourglass.deadline.retry.why': 'no-budget',
    },
  ])
  expect(
    await otel.counter('hourglass.deadline.retries', {
      'hourglass.deadline.retry.outcome': 'skipped',
      'hourglass.deadline.retry.why': 'no-budget',
    }),
  ).toBe(1)
})

it('llm: the model attempt the deadline ended has its chat span inside the request, and its retry_skipped on it', async () => {
  const fake: FakeProvider = await startFakeProvider({ dialect: 'openai' })
  cleanups.push(() => fake.close())
  fake.enqueue(reply.hang())
  const model: ModelAdapter = openAICompatible({
    baseURL: fake.baseURL,
    apiKey: 'sk-a',
    model: 'gpt-x',
  })
  cleanups.push(() => model.close?.())
  const app = express()
  app.use(deadline({ reserveMs: 10 }))
  app.get('/', async (_req, res, next) => {
    try {
      const answer = await callModel({
        models: [model],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
        limits: { admission: false },
      })
      res.send(answer.text)
    } catch (error) {
      next(error)
    }
  })
  app.use(deadlineErrors())

  const { status, spans, server } = await serveOnce(app, 500)
  expect(status).toBe(504)
  const chat = spans.find((s) => s.name === 'chat gpt-x')
  expect(chat?.parentSpanContext?.spanId).toBe(server.spanContext().spanId)
  expect(chat?.attributes['error.type']).toBe('DEADLINE_EXCEEDED')
  // Ended before its parent: exported first.
  expect(exportedAt(spans, 'chat gpt-x')).toBeGreaterThanOrEqual(0)
  expect(exportedAt(spans, 'chat gpt-x')).toBeLessThan(exportedAt(spans, 'server'))
  expect(eventsNamed(server, 'hourglass.deadline.retry_skipped')).toEqual([
    {
      'hourglass.deadline.attempt': 1,
      'hourglass.deadline.retry.reason': 'deadline_exceeded',
      'hourglass.deadline.retry.why': 'no-budget',
    },
  ])
})

it('fetch: a retry abandoned when the client left during its wait has its retry_skipped on the server span', async () => {
  // 503 with Retry-After: 1 s, well within the 5 s budget: the retry waits.
  const upstream = await faultServer(() => ({
    type: 'respond',
    status: 503,
    body: 'busy',
    headers: { 'retry-after': '1' },
  }))
  cleanups.push(() => upstream.close())
  const fetch: HourglassFetch = createFetch({ retry: { statuses: [503] } })
  cleanups.push(() => fetch.close())
  const app = express()
  app.use(deadline())
  app.get('/', async (_req, res, next) => {
    try {
      const answer = await fetch(`${upstream.url}/price`)
      res.status(answer.status).send(await answer.text())
    } catch (error) {
      next(error)
    }
  })
  // The client leaves once the retry is announced: during its wait.
  const retried = new Promise<void>((resolve) => {
    const onRetry = () => {
      fetchChannels.retry.unsubscribe(onRetry)
      resolve()
    }
    fetchChannels.retry.subscribe(onRetry)
    cleanups.push(() => fetchChannels.retry.unsubscribe(onRetry))
  })

  const { server } = await serveOnce(app, 5000, async (req) => {
    await retried
    req.destroy()
  })
  expect(server.attributes['hourglass.deadline.outcome']).toBe('client-closed')
  expect(eventsNamed(server, 'hourglass.deadline.retry')).toHaveLength(1)
  // Else the retry event stands alone, read as a retry made.
  expect(eventsNamed(server, 'hourglass.deadline.retry_skipped')).toEqual([
    {
      'hourglass.deadline.attempt': 1,
      'hourglass.deadline.retry.reason': 'HTTP_503',
      'hourglass.deadline.retry.why': 'aborted',
    },
  ])
  expect(
    await otel.counter('hourglass.deadline.retries', {
      'hourglass.deadline.retry.outcome': 'skipped',
      'hourglass.deadline.retry.why': 'aborted',
    }),
  ).toBe(1)
})
