import {
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
} from '@grpc/grpc-js'
import { Deadline, runWithDeadline } from '@hourglass/core'
import { deadlineInterceptor, deadlineServerInterceptor } from '@hourglass/grpc'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import {
  type Context,
  propagation,
  SpanKind,
  type TextMapPropagator,
  type TextMapSetter,
} from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { jsonUnary } from './helpers/jsonUnary.js'
import { setupOtel } from './helpers/otel.js'

// A propagator that writes a field grpc-js's Metadata refuses (as Jaeger's
// does for a baggage key with a space: `uberctx-tenant name`): Metadata.set
// throws inside the client-start handler, which had started the CLIENT span
// but not yet recorded it — so clientEnd found nothing and the span was
// never ended, never exported (only a diag error said so).

const service = { ask: jsonUnary('/shop.Quotes/Ask') }
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')

class RefusedFieldPropagator implements TextMapPropagator {
  readonly #w3c = new W3CTraceContextPropagator()
  inject(context: Context, carrier: unknown, setter: TextMapSetter): void {
    this.#w3c.inject(context, carrier, setter)
    setter.set(carrier, 'uberctx-tenant name', 'acme')
  }
  extract(context: Context, carrier: unknown, getter: Parameters<TextMapPropagator['extract']>[2]) {
    return this.#w3c.extract(context, carrier, getter)
  }
  fields(): string[] {
    return this.#w3c.fields()
  }
}

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const closers: Array<() => void> = []

beforeEach(() => {
  otel = setupOtel()
  propagation.setGlobalPropagator(new RefusedFieldPropagator())
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
})

afterEach(async () => {
  for (const close of closers.splice(0)) close()
  stop()
  // The global propagator set above: not left for a later file of this worker.
  propagation.disable()
  await otel.shutdown()
})

it('ends the CLIENT span of a call whose propagator field grpc-js refuses, and still sends traceparent', async () => {
  const server = new Server({ interceptors: [deadlineServerInterceptor()] })
  server.addService(service, {
    ask: (_call: unknown, callback: (error: null, value: unknown) => void) =>
      callback(null, { ok: true }),
  })
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, p) =>
      error ? reject(error) : resolve(p),
    ),
  )
  closers.push(() => server.forceShutdown())
  const client = new QuotesClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  }) as unknown as {
    ask(
      request: unknown,
      metadata: Metadata,
      callback: (error: ServiceError | null, value?: unknown) => void,
    ): void
    close(): void
  }
  closers.push(() => client.close())

  const answer = await runWithDeadline(
    Deadline.after(2000),
    () =>
      new Promise((resolve, reject) =>
        client.ask({}, new Metadata(), (error, value) => (error ? reject(error) : resolve(value))),
      ),
  )
  expect(answer).toEqual({ ok: true })

  const spans = await otel.spansWhere(
    (ended) => ended.filter((span) => span.name === 'shop.Quotes/Ask').length === 2,
    2000,
  )
  const clientSpan = spans.find((span) => span.kind === SpanKind.CLIENT)
  const serverSpan = spans.find((span) => span.kind === SpanKind.SERVER)
  expect(clientSpan).toBeDefined()
  expect(clientSpan?.attributes['hourglass.deadline.outcome']).toBe('ok')
  // The fields before the refused one still went out: the server's span joins the trace.
  expect(serverSpan?.parentSpanContext?.spanId).toBe(clientSpan?.spanContext().spanId)
})
