import {
  Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js'
import { currentDeadline, Deadline, runWithDeadline } from '@hourglass/core'
import { describe, expect, it, onTestFinished } from 'vitest'
import {
  deadlineServerInterceptor,
  type GrpcServerStartMessage,
  grpcChannels,
  withCallDeadline,
} from '../src/index.js'
import { channelHarness } from './support/channelHarness.js'
import { deferred, record, unary, type WorkClientApi } from './support/grpc.js'

// A handler that forwards its inbound metadata to the next hop
// (`client.method(request, call.metadata, …)`, how grpc-node code commonly
// passes auth and tracing on) forwards the deadline metadata its own caller
// sent too: Envoy's `x-envoy-expected-rq-timeout-ms` (the edge's whole route
// timeout), an SDK's `x-stainless-timeout`. A Hourglass server trusts
// Envoy's by default and takes the smallest valid value: that stale budget
// cut a call its caller had exempted with `withCallDeadline(Deadline.never())`
// (the README: "sends none, even when its metadata came with one") to the
// edge's 300 ms, and a call given a longer deadline of its own to it too.
// The client already dropped a forwarded `x-deadline-remaining-ms` for this
// reason. Real grpc-js servers and client on 127.0.0.1; the next hop reports
// the budget it read.

const { serve, client } = channelHarness()

/** The next hop: answers with the budget its handler was given; its server-start messages. */
async function nextHop(options: Parameters<typeof deadlineServerInterceptor>[0] = {}) {
  const started = record<GrpcServerStartMessage>(grpcChannels.serverStart)
  onTestFinished(() => started.stop())
  const server = await serve(
    {
      unary(call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) {
        callback(null, {
          budgetMs: currentDeadline()?.budgetMs,
          envoy: call.metadata.get('x-envoy-expected-rq-timeout-ms'),
          stainless: call.metadata.get('x-stainless-timeout'),
        })
      },
    },
    [deadlineServerInterceptor(options)],
  )
  return { c: client(server.address) as WorkClientApi, started }
}

/** Inbound metadata as a handler would forward it: the edge's Envoy timeout among it. */
function forwarded(): Metadata {
  const metadata = new Metadata()
  metadata.set('authorization', 'Bearer t')
  metadata.set('x-envoy-expected-rq-timeout-ms', '300')
  return metadata
}

describe('deadline metadata forwarded from the inbound call', () => {
  it('a call exempted with Deadline.never() sends none of it: the next hop takes its own default, not the edge’s 300 ms', async () => {
    const { c, started } = await nextHop()
    const metadata = forwarded()

    const { value, error } = await unary(c, {}, withCallDeadline(Deadline.never()), metadata)

    expect(error).toBeUndefined()
    expect(started.messages.at(-1)).toMatchObject({ source: 'default', budgetMs: 2000 })
    expect(value).toMatchObject({ envoy: [] })
    // On a copy: the caller's Metadata object is not changed.
    expect(metadata.get('x-envoy-expected-rq-timeout-ms')).toEqual(['300'])
    expect(metadata.get('authorization')).toEqual(['Bearer t'])
  })

  it("a call given a longer deadline of the caller's than the forwarded value: the next hop gets that deadline", async () => {
    const { c, started } = await nextHop()
    const caller = Deadline.after(20_000)
    onTestFinished(() => caller.dispose())

    await runWithDeadline(caller, () => unary(c, {}, {}, forwarded()))

    // Its own 20 s (less the time to get there), not cut to the forwarded 300 ms.
    const start = started.messages.at(-1)
    expect(start?.source).not.toBe('x-envoy-expected-rq-timeout-ms')
    expect(start?.budgetMs).toBeGreaterThan(300)
  })

  it('a forwarded x-stainless-timeout, on a next hop that trusts it, is dropped the same way', async () => {
    const { c, started } = await nextHop({
      trust: ['grpc-timeout', 'x-deadline-remaining-ms', 'x-stainless-timeout'],
    })
    const metadata = new Metadata()
    metadata.set('x-stainless-timeout', '1')

    const { value } = await unary(c, {}, withCallDeadline(Deadline.never()), metadata)

    expect(started.messages.at(-1)).toMatchObject({ source: 'default', budgetMs: 2000 })
    expect(value).toMatchObject({ stainless: [] })
  })

  it('a grpc-timeout in its metadata (a bridge copying gRPC-web headers into it) goes neither under never(): the next hop takes its default, not 300 ms', async () => {
    // grpc-js writes grpc-timeout from the call's deadline over one in the
    // metadata, but a call with none (exempted) sent the caller's as given,
    // and grpc-js's server enforced it: the exempted call was cut to 300 ms.
    const { c, started } = await nextHop()
    const metadata = new Metadata()
    metadata.set('grpc-timeout', '300m')

    const exempted = await unary(c, {}, withCallDeadline(Deadline.never()), metadata)
    const current = await runWithDeadline(Deadline.never(), () => unary(c, {}, {}, metadata))

    expect([exempted.error, current.error]).toEqual([undefined, undefined])
    expect(started.messages.slice(-2)).toMatchObject([
      { source: 'default', budgetMs: 2000 },
      { source: 'default', budgetMs: 2000 },
    ])
    // On a copy: the caller's Metadata object is not changed.
    expect(metadata.get('grpc-timeout')).toEqual(['300m'])
  })

  // grpc-js writes its grpc-timeout over the metadata's only when the call's
  // own gRPC deadline is finite. Dark mode gives the call none, and neither
  // does a deadline beyond 2^31-1 ms (grpc-js's server would read it wrapped
  // into the past): both sent the metadata's stale 300m, and the next hop
  // cut a call with 5 s, or 30 days, left to 300 ms. A next hop that reads
  // grpc-timeout alone now takes its default; one that reads ours too, the
  // call's x-deadline-remaining-ms.
  it('a grpc-timeout in its metadata goes neither under a dark-mode deadline with time left: the next hop reads that deadline or its default, not 300 ms', async () => {
    const hop = await nextHop()
    const grpcOnly = await nextHop({ trust: ['grpc-timeout'] })
    const metadata = new Metadata()
    metadata.set('grpc-timeout', '300m')
    const dark = Deadline.after(5_000, { observe: true })
    onTestFinished(() => dark.dispose())

    const results = await runWithDeadline(dark, async () => [
      await unary(hop.c, {}, {}, metadata),
      await unary(grpcOnly.c, {}, {}, metadata),
    ])

    expect(results.map((r) => r.error)).toEqual([undefined, undefined])
    // One recording of every server's starts, in call order.
    const [read, grpcOnlyRead] = hop.started.messages.slice(-2)
    expect(read?.source).toBe('x-deadline-remaining-ms')
    expect(read?.budgetMs).toBeGreaterThan(300)
    expect(read?.budgetMs).toBeLessThanOrEqual(5_000)
    expect(grpcOnlyRead).toMatchObject({ source: 'default', budgetMs: 2000 })
    expect(metadata.get('grpc-timeout')).toEqual(['300m'])
  })

  it('a grpc-timeout in its metadata goes neither under an enforced deadline 30 days out: the next hop takes its cap or its default, not 300 ms', async () => {
    const hop = await nextHop()
    const grpcOnly = await nextHop({ trust: ['grpc-timeout'] })
    const metadata = new Metadata()
    metadata.set('grpc-timeout', '300m')
    const far = Deadline.after(30 * 24 * 3_600_000)
    onTestFinished(() => far.dispose())

    const results = await runWithDeadline(far, async () => [
      await unary(hop.c, {}, {}, metadata),
      await unary(grpcOnly.c, {}, {}, metadata),
    ])

    expect(results.map((r) => r.error)).toEqual([undefined, undefined])
    // The 30 days, cut to the next hop's maxMs (30 s by default).
    expect(hop.started.messages.slice(-2)).toMatchObject([
      { source: 'x-deadline-remaining-ms', budgetMs: 30_000 },
      { source: 'default', budgetMs: 2000 },
    ])
    expect(metadata.get('grpc-timeout')).toEqual(['300m'])
  })

  // A response stream made from a watch (a server stream that came with no
  // deadline) gets no gRPC deadline: not from the watch's deadline, which has
  // no expiry, nor in dark mode, nor `defaultMs` (a stream is long-lived).
  // grpc-js writes no grpc-timeout over the metadata's: it is not sent.
  it.each(['enforce', 'observe'] as const)(
    'a grpc-timeout in its metadata goes neither on a response stream made from a watch (%s): the next hop reads none, not 300 ms',
    async (mode) => {
      const started = record<GrpcServerStartMessage>(grpcChannels.serverStart)
      onTestFinished(() => started.stop())
      const next = await serve(
        {
          serverStream(call: ServerWritableStream<unknown, unknown>) {
            call.end()
          },
        },
        [deadlineServerInterceptor({})],
      )
      const toNext = client(next.address)
      const metadata = new Metadata()
      metadata.set('grpc-timeout', '300m')
      const watch = await serve(
        {
          async serverStream(call: ServerWritableStream<unknown, unknown>) {
            const ended = deferred<number>()
            const stream = toNext.serverStream({}, metadata, {})
            stream.on('data', () => {})
            stream.on('status', (s: { code: number }) => ended.resolve(s.code))
            call.write({ code: await ended.promise })
            call.end()
          },
        },
        [deadlineServerInterceptor({ mode })],
      )
      const codes: unknown[] = []
      await new Promise<void>((resolve) => {
        const stream = client(watch.address).serverStream({}, new Metadata(), {})
        stream.on('data', (value: unknown) => codes.push(value))
        stream.on('status', () => resolve())
      })

      expect(codes).toEqual([{ code: status.OK }])
      // The watch's start, then the next hop's: no deadline for either.
      expect(started.messages.map((m) => m.budgetMs)).toEqual([
        Number.POSITIVE_INFINITY,
        Number.POSITIVE_INFINITY,
      ])
      expect(metadata.get('grpc-timeout')).toEqual(['300m'])
    },
  )

  it('a call with no deadline at all leaves the metadata as it is (nothing of the caller’s decides)', async () => {
    const { c, started } = await nextHop()

    const { value } = await unary(c, {}, {}, forwarded())

    expect(value).toMatchObject({ envoy: ['300'] })
    expect(started.messages.at(-1)).toMatchObject({ source: 'x-envoy-expected-rq-timeout-ms' })
  })
})
