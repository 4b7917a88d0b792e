// Deadlines in OpenTelemetry, printed to the console: a request with 300 ms
// crosses two services; the second one's slow lookup runs out of time.
// Run: npm run build && node examples/otel-console/index.mjs

import { instrumentDeadlines, printWaterfall } from '@hourglass/otel'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'

// A reader that leaves early (`| head`, `less` quit) ends the output, not the
// run: unhandled, its EPIPE was a stack trace and exit 1 in the middle of it.
process.stdout.on('error', (error) => {
  if (error.code !== 'EPIPE') throw error
})

// 1. The SDK, before express is loaded: instrumentation-http patches `http` as it is required.
const exporter = new InMemorySpanExporter() // or ConsoleSpanExporter / OTLP in a real service
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
provider.register({ propagator: new W3CTraceContextPropagator() })
// http: server spans; undici: client spans and the traceparent header, so both hops are one trace.
for (const instrumentation of [new HttpInstrumentation(), new UndiciInstrumentation()]) {
  instrumentation.setTracerProvider(provider)
  instrumentation.enable()
}
const stop = instrumentDeadlines() // spans for slices and attempts, events, metrics

const { setTimeout: sleep } = await import('node:timers/promises')
const { default: express } = await import('express')
const { DEADLINE_EXPIRED_HEADER, DEADLINE_HEADER, DeadlineExceededError } = await import(
  '@hourglass/core'
)
const { deadline, deadlineErrors } = await import('@hourglass/express')
const { createFetch } = await import('@hourglass/fetch')
const fetch = createFetch()
const servers = []
const serve = (app) =>
  new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${server.address().port}`),
    )
    servers.push(server)
  })
const handle = (fn) => (req, res, next) => fn(req, res).catch(next)

const prices = express()
prices.use(deadline({ plan: { lookup: 3, format: 1 } }))
prices.get(
  '/price',
  handle(async (req, res) => {
    await req.plan.run('lookup', (signal) => sleep(500, undefined, { signal })) // a cold cache
    await req.plan.run('format', async () => res.json({ price: 42 }))
  }),
)
prices.use(deadlineErrors())
const pricesUrl = await serve(prices)

const quotes = express()
quotes.use(deadline({ plan: { prepare: 1, upstream: 4 } }))
quotes.get(
  '/quote',
  handle(async (req, res) => {
    await req.plan.run('prepare', (signal) => sleep(20, undefined, { signal }))
    const r = await req.plan.run('upstream', async (_signal, slice) => {
      const r = await fetch(`${pricesUrl}/price`, { deadline: slice })
      if (r.status === 504 && r.headers.get(DEADLINE_EXPIRED_HEADER) === '1') {
        // The prices service ran out of the time this slice gave it. Passing its
        // 504 on would tell our caller the inner hop's budget: answer our own
        // (deadlineErrors: the budget our caller sent), naming the slice that ran out.
        const inner = await r.json()
        throw new DeadlineExceededError({
          budgetMs: slice.budgetMs,
          elapsedMs: slice.elapsed(),
          slice: inner.slice ?? undefined,
        })
      }
      return r
    })
    if (!r.ok) {
      // Prices failed on its own (a bug, its database down): Express's page
      // for it is HTML, which read as JSON here was a 500 about a SyntaxError,
      // the cause lost. Said in JSON instead, naming whose failure it was.
      await r.body?.cancel()
      return res
        .status(502)
        .json({ error: 'upstream_failed', reason: `prices answered ${r.status}` })
    }
    res.json(await r.json())
  }),
)
quotes.use(deadlineErrors())
const quotesUrl = await serve(quotes)

// The label printed is the value sent: change one, the other follows.
const budgetMs = 300
const res = await globalThis.fetch(`${quotesUrl}/quote`, {
  headers: { [DEADLINE_HEADER]: String(budgetMs) },
})
console.log(`GET /quote with ${budgetMs} ms → ${res.status} ${await res.text()}\n`)

await provider.forceFlush()
printWaterfall(exporter.getFinishedSpans())

stop()
await fetch.close()
for (const server of servers) {
  server.closeAllConnections()
  server.close()
}
await provider.shutdown()
