import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  credentials,
  type Metadata,
  Metadata as MetadataClass,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import {
  currentDeadline,
  Deadline,
  MAX_RESERVE_MS,
  MIN_RESERVE_MS,
  runWithDeadline,
} from '@hourglass/core'
import {
  deadlineInterceptor,
  deadlineServerInterceptor,
  grpcChannels,
  type ServerDeadlineOptions,
} from '@hourglass/grpc'
import {
  DeadlineContextManager,
  instrumentDeadlines,
  type StopInstrumentation,
} from '@hourglass/otel'
import {
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { watchLoopStalls } from '../../../test/support/loopStalls.js'
import { jsonUnary } from './helpers/jsonUnary.js'
import { setupOtel } from './helpers/otel.js'

// Real grpc-js over loopback HTTP/2, with @hourglass/grpc's interceptors on
// both sides; the spans come from instrumentDeadlines alone (no gRPC
// instrumentation), the trace context crosses in the metadata.

const service = {
  ask: jsonUnary('/shop.Quotes/Ask'),
  // Server-streaming: a watch, long-lived by design.
  watch: { ...jsonUnary('/shop.Quotes/Watch'), responseStream: true },
}
type Handler = (
  call: { request: unknown; metadata: Metadata; on(event: 'cancelled', fn: () => void): void },
  callback: (error: Partial<ServiceError> | null, value?: unknown) => void,
) => void
interface QuotesClient {
  watch(request: unknown, metadata: Metadata): NodeJS.ReadableStream & { cancel(): void }
  ask(
    request: unknown,
    metadata: Metadata,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): { cancel(): void }
  close(): void
}
const QuotesClient = makeGenericClientConstructor(service, 'Quotes')

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const closers: Array<() => void> = []

beforeEach(() => {
  otel = setupOtel()
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
})
afterEach(async () => {
  try {
    for (const close of closers.splice(0)) close()
  } finally {
    // Even if a close throws: the subscriptions and providers must not outlive the file.
    stop()
    await otel.shutdown()
  }
})

async function start(
  ask: Handler,
  options: ServerDeadlineOptions = {},
  watch?: (call: { write(value: unknown): boolean; end(): void }) => void,
): Promise<QuotesClient> {
  const server = new Server({ interceptors: [deadlineServerInterceptor(options)] })
  server.addService(service, watch ? { ask, watch } : { ask })
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  )
  const client = new QuotesClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  }) as unknown as QuotesClient
  closers.push(
    () => client.close(),
    () => server.forceShutdown(),
  )
  return client
}

function ask(
  client: QuotesClient,
  metadata: Metadata = new MetadataClass(),
): Promise<{ error?: ServiceError; value?: unknown }> {
  return new Promise((resolve) => {
    client.ask({}, metadata, (error, value) => resolve(error ? { error } : { value }))
  })
}

/** Run `fn` with a fresh span active and `deadline` current, as an Express handler would. */
function asCaller<T>(deadline: Deadline, fn: () => T): { caller: Span; result: T } {
  const caller = otel.tracer.startSpan('GET /quote', { kind: SpanKind.SERVER })
  const result = context.with(trace.setSpan(context.active(), caller), () =>
    runWithDeadline(deadline, fn),
  )
  return { caller, result }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => {}
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

const kindOf = (spans: ReadableSpan[], kind: SpanKind) => {
  const found = spans.filter((s) => s.kind === kind && s.name === 'shop.Quotes/Ask')
  expect(found, `one ${SpanKind[kind]} span`).toHaveLength(1)
  return found[0] as ReadableSpan
}
const bothEnded = (spans: ReadableSpan[]) =>
  spans.filter((s) => s.name === 'shop.Quotes/Ask').length === 2

describe('instrumentDeadlines: gRPC', () => {
  it('a call is a CLIENT span and a SERVER span in the caller’s trace, each with its budget; the traceparent rides in a copy of the metadata', async () => {
    const client = await start((_call, callback) => callback(null, { price: 42 }), {
      reserveMs: 10,
    })
    const metadata = new MetadataClass()
    // How long the process was kept from running while the call connected and sent (below).
    const stalls = watchLoopStalls()
    // 8 s of wall clock: the call connects, is answered and comes back within
    // it on a loaded machine too (800 ms: ~390 of them seen gone, a box at
    // four busy loops over its two cores).
    const { caller, result } = asCaller(Deadline.after(8000), () => ask(client, metadata))
    expect((await result).value).toEqual({ price: 42 })
    const stalledMs = stalls.stop()
    caller.end()
    const spans = await otel.spansWhere(bothEnded)
    const out = kindOf(spans, SpanKind.CLIENT)
    const inbound = kindOf(spans, SpanKind.SERVER)

    expect(out.parentSpanContext?.spanId).toBe(caller.spanContext().spanId)
    expect(inbound.spanContext().traceId).toBe(caller.spanContext().traceId)
    expect(inbound.parentSpanContext?.spanId).toBe(out.spanContext().spanId)
    // The caller's own Metadata object is not touched: the subscriber wrote on the copy sent.
    expect(metadata.get('traceparent')).toEqual([])

    expect(out.attributes).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.service': 'shop.Quotes',
      'rpc.method': 'Ask',
      'rpc.grpc.status_code': 0,
      'hourglass.deadline.outcome': 'ok',
    })
    const given = out.attributes['hourglass.deadline.budget_ms'] as number
    // Given as the call starts, in the same tick as the deadline was made:
    // 100 ms, and any time a loaded box kept this process from running.
    expect(given).toBeLessThanOrEqual(8000)
    expect(given).toBeGreaterThan(7900 - stalledMs)
    // The header is written when the stream opens, a moment after the budget
    // was given (the connection is made first): 20 ms, and any time a loaded
    // box kept this process from running meanwhile. Whole ms, read against
    // the call's own epoch deadline (Date.now()'s whole ms) where the budget
    // is read on the deadline's clock: up to 1 ms above a fractional budget.
    const header = out.attributes['hourglass.deadline.header_ms'] as number
    expect(header).toBeLessThanOrEqual(Math.ceil(given))
    expect(header).toBeGreaterThan(given - 20 - stalledMs)
    expect(out.status.code).toBe(SpanStatusCode.UNSET)

    expect(inbound.attributes).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.service': 'shop.Quotes',
      'rpc.method': 'Ask',
      'hourglass.deadline.source': 'grpc-timeout',
      'hourglass.deadline.clamped': false,
      'hourglass.deadline.mode': 'enforce',
      'rpc.grpc.status_code': 0,
      'hourglass.deadline.outcome': 'ok',
    })
    // The server's budget is what reached it (less than the client gave); the
    // handler gets the adaptive reserve less (10–100 ms; attributes round to 0.1 ms).
    // The budget counts from the call's arrival, and remaining_ms is read
    // when its deadline starts, after the metadata has passed the
    // interceptors (0–6 ms later in runs here, against the 90 ms
    // between the reserve given, 10, and the bound's 100): a loaded box that
    // kept this process from running meanwhile took that time off too, past
    // the bound with a stall of 90 ms. So the bound is lowered by any time
    // this process was kept from running, and 1 ms.
    const budget = inbound.attributes['hourglass.deadline.budget_ms'] as number
    expect(budget).toBeLessThanOrEqual(given)
    const remaining = inbound.attributes['hourglass.deadline.remaining_ms'] as number
    expect(remaining).toBeLessThanOrEqual(budget - MIN_RESERVE_MS + 0.1)
    expect(remaining).toBeGreaterThanOrEqual(budget - MAX_RESERVE_MS - 1 - stalledMs)
  })

  it('a call that runs out: the server span fails with a deadline.exceeded event, the client span says expired', async () => {
    // A handler that never answers: the server's deadline does. The server
    // cuts the call to 150 ms (`maxMs`) while the caller gives it 5 s: with
    // the caller's 150 ms as the only clock, the client's own timer was due
    // within the server's reserve (10–100 ms) of the server's, and a transit
    // or a stall longer than that on a loaded box let the client cancel
    // first — a client-cancelled server span with no exceeded event. Here
    // the client's timer is 4.8 s away; if the server did not answer at its
    // deadline, grpc-js's client timer would, with its own message instead.
    const client = await start(() => {}, { maxMs: 150 })
    const { caller, result } = asCaller(Deadline.after(5000), () => ask(client))
    const { error } = await result
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(error?.details).toMatch(/^deadline exceeded: /)
    caller.end()
    const spans = await otel.spansWhere(bothEnded)
    const inbound = kindOf(spans, SpanKind.SERVER)
    const exceeded = inbound.events.find((e) => e.name === 'hourglass.deadline.exceeded')
    expect(exceeded?.attributes).toMatchObject({
      'hourglass.deadline.stage': 'handler',
      'hourglass.deadline.action': 'status',
    })
    expect(inbound.status.code).toBe(SpanStatusCode.ERROR)
    expect(inbound.attributes).toMatchObject({
      'error.type': 'DEADLINE_EXCEEDED',
      'rpc.grpc.status_code': status.DEADLINE_EXCEEDED,
      'hourglass.deadline.outcome': 'expired',
    })
    const out = kindOf(spans, SpanKind.CLIENT)
    expect(out.status.code).toBe(SpanStatusCode.ERROR)
    expect(out.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'expired',
      'error.type': 'DEADLINE_EXCEEDED',
    })
  })

  it('a call with no time left is refused: a CLIENT span says so, and no server span exists', async () => {
    let ran = false
    const client = await start((_call, callback) => {
      ran = true
      callback(null, {})
    })
    const spent = Deadline.after(0)
    const { caller, result } = asCaller(spent, () => ask(client))
    expect((await result).error?.code).toBe(status.DEADLINE_EXCEEDED)
    caller.end()
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === 'shop.Quotes/Ask'))
    const out = kindOf(spans, SpanKind.CLIENT)
    expect(out.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'refused',
      'hourglass.deadline.budget_ms': 0,
    })
    expect(out.status.code).toBe(SpanStatusCode.ERROR)
    expect(ran).toBe(false)
  })

  it('a malformed deadline header in the metadata is an event on the call’s span', async () => {
    const client = await start((_call, callback) => callback(null, {}))
    const metadata = new MetadataClass()
    metadata.set('x-deadline-remaining-ms', 'soon')
    expect((await ask(client, metadata)).value).toEqual({})
    const spans = await otel.spansWhere(bothEnded)
    const inbound = kindOf(spans, SpanKind.SERVER)
    expect(
      inbound.events.find((e) => e.name === 'hourglass.deadline.invalid_header')?.attributes,
    ).toEqual({
      'hourglass.deadline.invalid_header.name': 'x-deadline-remaining-ms',
      'hourglass.deadline.invalid_header.reason': expect.any(String),
    })
    // The budget comes from the other source the call carried: the client's
    // default gRPC deadline for a call with none (its `defaultMs`).
    expect(inbound.attributes['hourglass.deadline.source']).toBe('grpc-timeout')
  })

  it('a call `strict` refuses still has its server span: the malformed header as an event, outcome refused, INVALID_ARGUMENT', async () => {
    let ran = false
    const client = await start(
      (_call, callback) => {
        ran = true
        callback(null, {})
      },
      { strict: true },
    )
    const metadata = new MetadataClass()
    metadata.set('x-deadline-remaining-ms', 'soon')
    expect((await ask(client, metadata)).error?.code).toBe(status.INVALID_ARGUMENT)
    expect(ran).toBe(false)
    const spans = await otel.spansWhere(bothEnded)
    const inbound = kindOf(spans, SpanKind.SERVER)
    expect(inbound.events.map((e) => e.name)).toContain('hourglass.deadline.invalid_header')
    expect(inbound.attributes['hourglass.deadline.outcome']).toBe('refused')
    expect(inbound.attributes['rpc.grpc.status_code']).toBe(status.INVALID_ARGUMENT)
    // The budget's source is named (the client's default gRPC deadline); none of it was left to spend.
    expect(inbound.attributes['hourglass.deadline.source']).toBe('grpc-timeout')
    expect(inbound.attributes).not.toHaveProperty('hourglass.deadline.remaining_ms')
  })

  it('the client leaving is a deadline.client_closed event on the server span', async () => {
    const handling = deferred()
    const gone = deferred()
    const client = await start((call) => {
      call.on('cancelled', gone.resolve)
      handling.resolve()
    })
    const running = client.ask({}, new MetadataClass(), () => {})
    await handling.promise // the server span exists by now
    running.cancel()
    await gone.promise
    const spans = await otel.spansWhere((all) => all.some((s) => s.kind === SpanKind.SERVER))
    const inbound = kindOf(spans, SpanKind.SERVER)
    expect(inbound.events.map((e) => e.name)).toContain('hourglass.deadline.client_closed')
    expect(inbound.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'client-cancelled',
      'rpc.grpc.status_code': status.CANCELLED,
    })
    // CANCELLED is the caller's doing: not an error of the server (RPC semconv).
    expect(inbound.status.code).toBe(SpanStatusCode.UNSET)
  })

  it('a watch (server-streaming) sent with no deadline has none: its span says source none, not default, and no budget', async () => {
    const client = await start(
      () => {},
      { defaultMs: 2000 },
      (call) => {
        call.write({ n: 1 })
        call.end()
      },
    )
    const stream = client.watch({}, new MetadataClass())
    const received: unknown[] = []
    stream.on('data', (message: unknown) => received.push(message))
    await new Promise((resolve) => stream.on('status', resolve))
    expect(received).toEqual([{ n: 1 }])
    const spans = await otel.spansWhere((all) =>
      all.some((s) => s.kind === SpanKind.SERVER && s.name === 'shop.Quotes/Watch'),
    )
    const inbound = spans.find((s) => s.kind === SpanKind.SERVER) as ReadableSpan
    // `default` would say defaultMs (2 s here) bounded it: nothing did.
    expect(inbound.attributes['hourglass.deadline.source']).toBe('none')
    expect(inbound.attributes).not.toHaveProperty('hourglass.deadline.budget_ms')
    expect(inbound.attributes['hourglass.deadline.outcome']).toBe('ok')
  })

  it('the client leaving while the handler waits on a gRPC call of its own: that CLIENT span ends before the server span, not after', async () => {
    const backendCalled = deferred()
    // A backend that holds the call: only the cancel that follows the client's ends it.
    const backend = await start(() => backendCalled.resolve())
    const client = await start(() => {
      backend.ask({}, new MetadataClass(), () => {})
    })
    const running = client.ask({}, new MetadataClass(), () => {})
    await backendCalled.promise
    running.cancel()
    // The caller's and the backend's too: all four ended, none left for the next test.
    const spans = await otel.spansWhere(
      (all) => all.filter((s) => s.name === 'shop.Quotes/Ask').length === 4,
    )
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]))
    const parentOf = (s: ReadableSpan) => byId.get(s.parentSpanContext?.spanId ?? '')
    const inbound = spans.find(
      (s) => s.kind === SpanKind.SERVER && parentOf(s)?.parentSpanContext === undefined,
    ) as ReadableSpan
    const outbound = spans.find(
      (s) => s.kind === SpanKind.CLIENT && parentOf(s) === inbound,
    ) as ReadableSpan
    expect(inbound.attributes['hourglass.deadline.outcome']).toBe('client-cancelled')
    expect(outbound.attributes['hourglass.deadline.outcome']).toBe('cancelled')
    // Handed to the exporter as they end (a SimpleSpanProcessor): the child first.
    expect(spans.indexOf(outbound)).toBeLessThan(spans.indexOf(inbound))
  })

  it('work inside the handler is parented to the call’s span although no OpenTelemetry context reaches it; DeadlineContextManager makes it the active span for other instrumentations too', async () => {
    let activeInHandler: Span | undefined
    const client = await start((_call, callback) => {
      activeInHandler = trace.getActiveSpan()
      currentDeadline()!
        .plan({ lookup: 1 })
        .run('lookup', async () => 'done')
        .then((value) => callback(null, { value }))
    })
    expect((await ask(client)).value).toEqual({ value: 'done' })
    let spans = await otel.spansWhere(
      (all) => bothEnded(all) && all.some((s) => s.name === 'deadline.slice lookup'),
    )
    const inbound = kindOf(spans, SpanKind.SERVER)
    const slice = spans.find((s) => s.name === 'deadline.slice lookup')
    expect(slice?.parentSpanContext?.spanId).toBe(inbound.spanContext().spanId)
    // Plain grpc-js: no span is active in the handler…
    expect(activeInHandler).toBeUndefined()

    // …until the context manager falls back to the call's span.
    otel.exporter.reset()
    context.disable()
    context.setGlobalContextManager(
      new DeadlineContextManager(new AsyncLocalStorageContextManager()).enable(),
    )
    expect((await ask(client)).value).toEqual({ value: 'done' })
    spans = await otel.spansWhere(bothEnded)
    expect(activeInHandler?.spanContext().spanId).toBe(
      kindOf(spans, SpanKind.SERVER).spanContext().spanId,
    )
  })
})

// RPC semconv 1.45 (stable): an instrumentation that emitted the older RPC
// attributes keeps them by default and SHOULD emit the stable ones under
// OTEL_SEMCONV_STABILITY_OPT_IN=rpc (only those) or rpc/dup (both).
describe('gRPC spans follow OTEL_SEMCONV_STABILITY_OPT_IN for the RPC conventions', () => {
  const optInBefore = process.env.OTEL_SEMCONV_STABILITY_OPT_IN
  afterEach(() => {
    if (optInBefore === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN
    else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = optInBefore
  })

  /** One call answered UNAVAILABLE by the server, seen with the opt-in set to `optIn`. */
  async function spansOfOneCall(optIn: string | undefined): Promise<ReadableSpan[]> {
    if (optIn === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN
    else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = optIn
    // The opt-in is read when instrumenting: again, now that it is set.
    stop()
    stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
    const client = await start(
      (_call, callback) => callback({ code: status.UNAVAILABLE, details: 'down for maintenance' }),
      { reserveMs: 10 },
    )
    const { error } = await runWithDeadline(Deadline.after(5000), () => ask(client))
    expect(error?.code).toBe(status.UNAVAILABLE)
    return otel.spansWhere(bothEnded)
  }
  const of = (spans: ReadableSpan[], kind: SpanKind) => kindOf(spans, kind).attributes

  it('unset: the older attributes, as before (rpc.system, rpc.service, a short rpc.method, the numeric rpc.grpc.status_code)', async () => {
    const spans = await spansOfOneCall(undefined)
    for (const kind of [SpanKind.CLIENT, SpanKind.SERVER]) {
      const attributes = of(spans, kind)
      expect(attributes).toMatchObject({
        'rpc.system': 'grpc',
        'rpc.service': 'shop.Quotes',
        'rpc.method': 'Ask',
        'rpc.grpc.status_code': status.UNAVAILABLE,
      })
      expect(attributes['rpc.system.name']).toBeUndefined()
      expect(attributes['rpc.status_code']).toBeUndefined()
    }
  })

  it('rpc: only the stable ones — rpc.system.name, the fully-qualified rpc.method, the status name in rpc.status_code', async () => {
    const spans = await spansOfOneCall('http, rpc')
    for (const kind of [SpanKind.CLIENT, SpanKind.SERVER]) {
      const attributes = of(spans, kind)
      expect(attributes).toMatchObject({
        'rpc.system.name': 'grpc',
        'rpc.method': 'shop.Quotes/Ask',
        'rpc.status_code': 'UNAVAILABLE',
        'error.type': 'UNAVAILABLE',
      })
      expect(attributes['rpc.system']).toBeUndefined()
      expect(attributes['rpc.service']).toBeUndefined()
      expect(attributes['rpc.grpc.status_code']).toBeUndefined()
    }
  })

  // The stable conventions ask for `rpc.method = _OTHER` on a method the
  // server does not know. grpc-js answers such a call UNIMPLEMENTED before any
  // server interceptor runs: there is no server span to name it, and the
  // client's names the method its stub called.
  it('rpc: a method the server does not serve has no server span; the client span names the method called', async () => {
    process.env.OTEL_SEMCONV_STABILITY_OPT_IN = 'rpc'
    stop()
    stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
    const served = await start((_call, callback) => callback(null, {}))
    const target = (served as unknown as { getChannel(): { getTarget(): string } })
      .getChannel()
      .getTarget()
      .replace(/^dns:/, '')
    const Unknown = makeGenericClientConstructor(
      { ask: { ...service.ask, path: '/shop.Quotes/Bid' } },
      'Quotes',
    )
    const client = new Unknown(target, credentials.createInsecure(), {
      interceptors: [deadlineInterceptor()],
    }) as unknown as QuotesClient
    closers.push(() => client.close())
    const { error } = await runWithDeadline(Deadline.after(5000), () => ask(client))
    expect(error?.code).toBe(status.UNIMPLEMENTED)
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === 'shop.Quotes/Bid'))
    expect(
      spans.map((s) => ({ name: s.name, kind: s.kind, method: s.attributes['rpc.method'] })),
    ).toEqual([{ name: 'shop.Quotes/Bid', kind: SpanKind.CLIENT, method: 'shop.Quotes/Bid' }])
  })

  it('rpc/dup (over rpc): both, with rpc.method fully qualified as the stable conventions have it', async () => {
    const spans = await spansOfOneCall('rpc,rpc/dup')
    expect(of(spans, SpanKind.SERVER)).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.system.name': 'grpc',
      'rpc.service': 'shop.Quotes',
      'rpc.method': 'shop.Quotes/Ask',
      'rpc.grpc.status_code': status.UNAVAILABLE,
      'rpc.status_code': 'UNAVAILABLE',
    })
  })
})

// The gRPC conventions require `server.address` (and `server.port` when the
// target names one) on a CLIENT span, from the channel's configuration, not
// the connection: one group of servers, one value. The spans had neither.
describe('instrumentDeadlines: the server a gRPC call was sent to', () => {
  const server = (spans: ReadableSpan[]) => {
    const out = kindOf(spans, SpanKind.CLIENT)
    return {
      address: out.attributes['server.address'],
      port: out.attributes['server.port'],
    }
  }

  it('server.address and server.port from the channel’s target, however it is spelt: a name stays a name, a unix socket is its path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hourglass-otel-'))
    const socket = join(dir, 'quotes.sock')
    const grpcServer = new Server({ interceptors: [deadlineServerInterceptor()] })
    grpcServer.addService(service, {
      ask: (_call: unknown, callback: (error: null, value: unknown) => void) =>
        callback(null, { price: 42 }),
    })
    const bind = (address: string) =>
      new Promise<number>((resolve, reject) =>
        grpcServer.bindAsync(address, ServerCredentials.createInsecure(), (error, bound) =>
          error ? reject(error) : resolve(bound),
        ),
      )
    const port = await bind('localhost:0')
    await bind(`unix:${socket}`)
    closers.push(
      () => grpcServer.forceShutdown(),
      () => rmSync(dir, { recursive: true, force: true }),
    )

    const cases: Array<[string, { address: unknown; port: unknown }]> = [
      [`localhost:${port}`, { address: 'localhost', port }],
      [`dns:///localhost:${port}`, { address: 'localhost', port }],
      [`ipv4:127.0.0.1:${port}`, { address: '127.0.0.1', port }],
      // Several addresses are no one server: the whole target, no port.
      [
        `ipv4:127.0.0.1:${port},127.0.0.1:${port}`,
        { address: `ipv4:127.0.0.1:${port},127.0.0.1:${port}`, port: undefined },
      ],
      [`unix:${socket}`, { address: socket, port: undefined }],
      [`unix://${socket}`, { address: socket, port: undefined }],
    ]
    for (const [target, expected] of cases) {
      otel.exporter.reset()
      const client = new QuotesClient(target, credentials.createInsecure(), {
        interceptors: [deadlineInterceptor()],
      }) as unknown as QuotesClient
      closers.push(() => client.close())
      const { result } = asCaller(Deadline.after(5000), () => ask(client))
      expect((await result).value, target).toEqual({ price: 42 })
      const spans = await otel.spansWhere(bothEnded)
      expect(server(spans), target).toEqual(expected)
      // The server's span reads no target: its own conventions ask for `:authority`.
      expect(kindOf(spans, SpanKind.SERVER).attributes['server.address'], target).toBeUndefined()
    }
  })

  it('a target grpc-js names in any other way is read as the conventions ask, and a strange one fails nothing', async () => {
    const cases: Array<[unknown, { address: unknown; port: unknown }]> = [
      // An authority is the DNS server to ask, not the server called.
      ['dns://8.8.8.8/grpc.io:50051', { address: 'grpc.io', port: 50051 }],
      // No port named: grpc-js's default, 443, the port it connects to.
      ['dns:///api.example.com', { address: 'api.example.com', port: 443 }],
      ['ipv4:10.0.0.1', { address: '10.0.0.1', port: 443 }],
      ['[::1]', { address: '::1', port: 443 }],
      ['xds:///quotes.example.com', { address: 'quotes.example.com', port: undefined }],
      ['xds:///quotes.example.com:8443', { address: 'quotes.example.com', port: 8443 }],
      // The address is `::1`; the brackets are the target's spelling.
      ['ipv6:[::1]:50051', { address: '::1', port: 50051 }],
      // A scheme with no rule: the whole target, no port.
      [
        'zk://zookeeper:2181/my-server',
        { address: 'zk://zookeeper:2181/my-server', port: undefined },
      ],
      ['dns:quotes:99999', { address: 'dns:quotes:99999', port: undefined }],
      // None, or not a string: neither attribute, and the call is traced all the same.
      [undefined, { address: undefined, port: undefined }],
      ['', { address: undefined, port: undefined }],
      [42, { address: undefined, port: undefined }],
    ]
    for (const [target, expected] of cases) {
      otel.exporter.reset()
      const call = {}
      const base = { call, deadline: undefined, method: '/shop.Quotes/Ask', target } as const
      grpcChannels.clientStart.publish(() => ({
        ...base,
        target: target as string | undefined,
        budgetMs: 1000,
        remainingMs: Number.POSITIVE_INFINITY,
        headerMs: undefined,
        refused: false,
        metadata: new MetadataClass(),
      }))
      grpcChannels.clientEnd.publish(() => ({
        ...base,
        target: target as string | undefined,
        code: status.OK,
        elapsedMs: 1,
        outcome: 'ok',
      }))
      const spans = await otel.spansWhere((all) => all.length === 1)
      expect(server(spans), String(target)).toEqual(expected)
    }
  })
})
