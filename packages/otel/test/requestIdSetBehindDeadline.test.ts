import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { currentDeadline, ManualClock, runWithRequestId } from '@hourglass/core'
import { deadline as deadlineMiddleware } from '@hourglass/express'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, type Span, trace } from '@opentelemetry/api'
import express from 'express'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel, spanNamed } from './helpers/otel.js'

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let clock: ManualClock

beforeEach(() => {
  otel = setupOtel()
  clock = new ManualClock()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  await otel.shutdown()
})

/** Run `fn` with a fresh span active, as instrumentation-http does for a request. */
function inSpan<T>(name: string, fn: (span: Span) => T): T {
  const span = otel.tracer.startSpan(name)
  return context.with(trace.setSpan(context.active(), span), () => fn(span))
}

/**
 * An app whose deadline() runs ahead of the middleware that sets the request
 * id (as the gateway's router does, mounted behind an app's own deadline()),
 * served with a server span active around it, ended on 'close'.
 */
async function serve(
  handler: express.RequestHandler,
  send: (base: string) => Promise<void>,
): Promise<void> {
  const app = express()
  app.use(deadlineMiddleware({ defaultMs: 1000, reserveMs: 0, clock }))
  app.use((_req, _res, next) => runWithRequestId('req-behind', next))
  app.get('/', handler)
  const server = createServer((req, res) =>
    inSpan('GET /', (span) => {
      res.on('close', () => span.end())
      app(req, res)
    }),
  )
  server.listen(0, '127.0.0.1')
  try {
    await once(server, 'listening')
    await send(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    await otel.spansWhere((spans) => spans.some((s) => s.name === 'GET /'))
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}

describe('the request id set after deadline() has announced the request', () => {
  it('reaches the server span through a span started inside the request, though the 504 ends it outside', async () => {
    let entered!: () => void
    const inside = new Promise<void>((resolve) => {
      entered = resolve
    })
    await serve(
      (_req, _res) => {
        const plan = currentDeadline()?.plan({ model: 1 }, { reserveMs: 0 })
        // Never settles: the request's deadline ends the slice, and deadline()'s
        // 504 (its timer, outside the request id's context) ends the request.
        plan
          ?.run('model', () => {
            entered()
            return new Promise(() => {})
          })
          .catch(() => {})
      },
      async (url) => {
        const answer = fetch(url)
        await inside
        clock.advance(1000)
        const res = await answer
        expect(res.status).toBe(504)
        await res.text()
      },
    )
    const spans = otel.exporter.getFinishedSpans()
    expect(spanNamed(spans, 'deadline.slice model').attributes['hourglass.request_id']).toBe(
      'req-behind',
    )
    expect(spanNamed(spans, 'GET /').attributes['hourglass.request_id']).toBe('req-behind')
  })

  it('reaches the server span at its end when the handler answered inside the request and started no span', async () => {
    await serve(
      (_req, res) => {
        res.send('ok')
      },
      async (url) => {
        const res = await fetch(url)
        expect(res.status).toBe(200)
        await res.text()
      },
    )
    const span = spanNamed(otel.exporter.getFinishedSpans(), 'GET /')
    expect(span.attributes['hourglass.request_id']).toBe('req-behind')
    expect(span.attributes['hourglass.deadline.outcome']).toBe('ok')
  })

  it('is not given to the server span of another request', async () => {
    // A request without the id middleware, served while a named request's
    // slice is open: its span stays without an id.
    const app = express()
    app.use(deadlineMiddleware({ defaultMs: 1000, reserveMs: 0, clock }))
    app.get('/plain', (_req, res) => {
      res.send('ok')
    })
    app.use((_req, _res, next) => runWithRequestId('req-behind', next))
    let entered!: () => void
    const inside = new Promise<void>((resolve) => {
      entered = resolve
    })
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    app.get('/named', (_req, res) => {
      const plan = currentDeadline()?.plan({ model: 1 }, { reserveMs: 0 })
      plan
        ?.run('model', () => {
          entered()
          return gate
        })
        .then(() => res.send('ok'))
    })
    const server = createServer((req, res) =>
      inSpan(`GET ${req.url}`, (span) => {
        res.on('close', () => span.end())
        app(req, res)
      }),
    )
    server.listen(0, '127.0.0.1')
    try {
      await once(server, 'listening')
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const named = fetch(`${base}/named`)
      await inside
      expect((await fetch(`${base}/plain`)).status).toBe(200)
      release()
      expect((await named).status).toBe(200)
      await otel.spansWhere((spans) => spans.filter((s) => s.name.startsWith('GET ')).length === 2)
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    const spans = otel.exporter.getFinishedSpans()
    expect(spanNamed(spans, 'GET /plain').attributes['hourglass.request_id']).toBeUndefined()
    expect(spanNamed(spans, 'GET /named').attributes['hourglass.request_id']).toBe('req-behind')
  })
})
