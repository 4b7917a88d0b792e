// One budget, one trace, across HTTP, gRPC and a job queue:
//   client ─HTTP─▶ edge (Express) ─gRPC─▶ quotes (grpc-js) ─BullMQ─▶ worker ─HTTP─▶ prices (Express)
// The quotes service enqueues a job and waits for its answer; the job's worker
// calls the prices service. Each hop gets what is left of the client's 1000 ms,
// and the OpenTelemetry SDK (in memory here) records every hop in one trace.
// Starts its own redis-server (testkit). Run: npm run build && node examples/one-trace/index.mjs

import { DeadlineContextManager, instrumentDeadlines, printWaterfall } from '@hourglass/otel'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
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

// The SDK, before express is loaded: instrumentation-http patches `http` as it is required.
//    DeadlineContextManager: inside a gRPC handler or a job, where OpenTelemetry has no
//    context of its own, the call's or the job's span is the active one — so the undici
//    span of the job's HTTP call, and the traceparent it sends, stay in this trace.
const exporter = new InMemorySpanExporter()
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
provider.register({
  propagator: new W3CTraceContextPropagator(),
  contextManager: new DeadlineContextManager(new AsyncLocalStorageContextManager()),
})
for (const instrumentation of [new HttpInstrumentation(), new UndiciInstrumentation()]) {
  instrumentation.setTracerProvider(provider)
  instrumentation.enable()
}
const stop = instrumentDeadlines() // HTTP, gRPC and job spans with their budgets

const grpc = await import('@grpc/grpc-js')
const { default: express } = await import('express')
const { Queue, QueueEvents, Worker } = await import('bullmq')
const { DEADLINE_HEADER, currentDeadline, untilEnded } = await import('@hourglass/core')
const { deadline, deadlineErrors } = await import('@hourglass/express')
const { createFetch } = await import('@hourglass/fetch')
const {
  deadlineInterceptor,
  deadlineServerInterceptor,
  fromGrpcError,
  deadlineErrors: grpcDeadlineErrors,
} = await import('@hourglass/grpc')
const { addWithDeadline, fromJobError, withDeadline } = await import('@hourglass/bullmq')
const { startRedis } = await import('@hourglass/testkit')

const servers = []
const serve = (app) =>
  new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${server.address().port}`),
    )
    servers.push(server)
  })
const handle = (fn) => (req, res, next) => fn(req, res).catch(next)

// Prices (HTTP): the last hop.
const prices = express()
prices.use(deadline())
prices.get('/price/:item', (req, res) => res.json({ item: req.params.item, price: 42 }))
prices.use(deadlineErrors())
const pricesUrl = await serve(prices)

// Worker (BullMQ): the job runs under the deadline it was added with; createFetch sends what is left.
const redis = await startRedis().catch((error) => {
  if (error?.code !== 'ENOENT') throw error
  console.error(
    'examples/one-trace needs redis-server on PATH (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)',
  )
  process.exit(1)
})
// redis-server is a child of this process: nothing stops it when this
// process ends, so a Ctrl-C, a kill or a failure below would leave it running,
// orphaned, holding its port. Stopped on a stop signal (then exit as the signal
// would have), and at any exit (stop() sends its SIGTERM at once). On a signal
// BullMQ's connections are closed first: cut by the server's exit instead, each
// would print an ECONNRESET stack on the way out.
const bullmq = []
let stopping = false
process.once('exit', () => void redis.stop())
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
]) {
  process.once(signal, () => {
    stopping = true
    void Promise.allSettled(bullmq.map((c) => c.close(true)))
      .then(() => redis.stop())
      .finally(() => process.exit(code))
  })
}
// The run below goes on while the handler closes its connections: stopped
// mid-run, its job cannot be added and its request fails. That failure is the
// stop, not an error of the run (the handler exits with the signal's code once
// Redis is down): not printed, nor left to reach the top level, where it would
// end the process at once, before Redis was stopped.
try {
  const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
  const fetch = createFetch()
  const worker = new Worker(
    'quotes',
    withDeadline(async (job) => {
      const res = await fetch(`${pricesUrl}/price/${job.data.item}`)
      // An error answer (a 503, a 504) fails the job: returned, it would be
      // the job's result, and the quote the edge would answer 200 with.
      if (!res.ok) {
        await res.body?.cancel()
        throw new Error(`prices answered ${res.status}`)
      }
      return res.json()
    }),
    { connection },
  )
  const queue = new Queue('quotes', { connection })
  const queueEvents = new QueueEvents('quotes', { connection })
  bullmq.push(worker, queue, queueEvents)
  await queueEvents.waitUntilReady()

  // Quotes (gRPC): enqueues the job under the call's deadline and waits for its answer.
  const json = {
    serialize: (value) => Buffer.from(JSON.stringify(value)),
    deserialize: (bytes) => JSON.parse(bytes.toString()),
  }
  const quotesService = {
    quote: {
      path: '/shop.Quotes/Quote',
      requestStream: false,
      responseStream: false,
      requestSerialize: json.serialize,
      requestDeserialize: json.deserialize,
      responseSerialize: json.serialize,
      responseDeserialize: json.deserialize,
    },
  }
  const quotes = new grpc.Server({ interceptors: [deadlineServerInterceptor()] })
  quotes.addService(
    quotesService,
    grpcDeadlineErrors({
      async quote(call, callback) {
        const job = await addWithDeadline(queue, 'price', { item: call.request.item }) // under the call's deadline
        // BullMQ's wait knows no deadline: with no worker taking the job (its
        // host down, a backlog), it waited on past the call's end, its two
        // listeners left on queueEvents, a pair per such call for the life of
        // the service. untilEnded ends this wait with the call; BullMQ's ttl,
        // a second later, removes its listeners (a later ttl, so the deadline's
        // error is the one seen). fromJobError: the job's deadline failure
        // arrives as a plain Error of its reason, which passed on would be
        // UNKNOWN here and a 500 at the edge, not the caller's 504.
        const deadline = currentDeadline()
        const ttlMs = deadline
          ? Math.min(2 ** 31 - 1, Math.ceil(deadline.remaining()) + 1000)
          : undefined
        try {
          callback(null, await untilEnded(job.waitUntilFinished(queueEvents, ttlMs), { deadline }))
        } catch (error) {
          callback(fromJobError(error))
        }
      },
    }),
  )
  const port = await new Promise((resolve, reject) =>
    quotes.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  )
  const Quotes = grpc.makeGenericClientConstructor(quotesService, 'Quotes')
  const client = new Quotes(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  })

  // Edge (HTTP): the client's budget in, a gRPC call out.
  const edge = express()
  edge.use(deadline({ maxMs: 10_000 }))
  edge.get(
    '/quote/:item',
    handle(async (req, res) => {
      const answer = await new Promise((resolve, reject) =>
        client.quote({ item: req.params.item }, (error, value) =>
          error ? reject(fromGrpcError(error)) : resolve(value),
        ),
      )
      res.json(answer)
    }),
  )
  edge.use(deadlineErrors())
  const edgeUrl = await serve(edge)

  // The label printed is the value sent: change one, the other follows.
  const budgetMs = 1000
  const res = await globalThis.fetch(`${edgeUrl}/quote/apples`, {
    headers: { [DEADLINE_HEADER]: String(budgetMs) },
  })
  // Stopped meanwhile, this answer is the stop's (a job that could not be
  // added, a 500), not one to print and draw: the catch below ends the run quietly.
  if (stopping) throw new Error('stopped by a signal')
  console.log(`GET /quote/apples with ${budgetMs} ms → ${res.status} ${await res.text()}`)

  await provider.forceFlush()
  const spans = exporter.getFinishedSpans()
  // What each hop was given, from its span: the budget shrinks as it travels.
  const SERVER = 1
  // A hop the request never reached (its budget ran out before) has no span.
  const given = (match) => spans.find(match)?.attributes['hourglass.deadline.budget_ms']
  const hops = [
    [
      'edge',
      'HTTP',
      given((s) => s.kind === SERVER && s.attributes['url.path'] === '/quote/apples'),
    ],
    ['quotes', 'gRPC', given((s) => s.kind === SERVER && s.name === 'shop.Quotes/Quote')],
    ['job', 'queue', given((s) => s.name === 'process quotes')],
    [
      'prices',
      'HTTP',
      given((s) => s.kind === SERVER && s.attributes['url.path'] === '/price/apples'),
    ],
  ]
  const budget = ([hop, via, ms]) =>
    ms === undefined ? `${hop} not reached (${via})` : `${hop} ${Math.round(ms)} ms (${via})`
  console.log(`budgets: ${hops.map(budget).join(' → ')}\n`)
  printWaterfall(spans)

  stop()
  client.close()
  quotes.forceShutdown()
  await worker.close()
  await queueEvents.close()
  await queue.close()
  await fetch.close()
  for (const server of servers) {
    server.closeAllConnections()
    server.close()
  }
  await redis.stop()
  await provider.shutdown()
} catch (error) {
  if (!stopping) throw error
}
