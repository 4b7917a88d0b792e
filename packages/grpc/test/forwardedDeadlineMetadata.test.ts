import { Metadata, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js'
import { currentDeadline, Deadline, runWithDeadline } from '@hourglass/core'
import { describe, expect, it, onTestFinished } from 'vitest'
import {
  deadlineServerInterceptor,
  type GrpcServerStartMessage,
  grpcChannels,
  withCallDeadline,
} from '../src/index.js'
import { channelHarness } from './support/channelHarness.js'
import { record, unary, type WorkClientApi } from './support/grpc.js'

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

  it('a call with no deadline at all leaves the metadata as it is (nothing of the caller’s decides)', async () => {
    const { c, started } = await nextHop()

    const { value } = await unary(c, {}, {}, forwarded())

    expect(value).toMatchObject({ envoy: ['300'] })
    expect(started.messages.at(-1)).toMatchObject({ source: 'x-envoy-expected-rq-timeout-ms' })
  })
})
