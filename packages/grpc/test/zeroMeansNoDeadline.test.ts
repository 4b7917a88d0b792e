import { type handleUnaryCall, Metadata, status } from '@grpc/grpc-js'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadlineServerInterceptor,
  type GrpcServerInvalidHeaderMessage,
  type GrpcServerStartMessage,
  grpcChannels,
  type ServerDeadlineOptions,
} from '../src/index.js'
import {
  connect,
  type Recording,
  type RunningServer,
  record,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

let server: RunningServer | undefined
let client: WorkClientApi | undefined
const recordings: Recording<unknown>[] = []

afterEach(async () => {
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
  for (const r of recordings.splice(0)) r.stop()
})

function watch<T>(channel: { name: string }): Recording<T> {
  const r = record<T>(channel)
  recordings.push(r as Recording<unknown>)
  return r
}

const answer: handleUnaryCall<unknown, unknown> = (_call, callback) => callback(null, { ok: true })

async function serve(options: ServerDeadlineOptions): Promise<WorkClientApi> {
  server = await startServer({ unary: answer }, [deadlineServerInterceptor(options)])
  client = connect(server.address)
  return client
}

function metadataWith(entries: Record<string, string>): Metadata {
  const metadata = new Metadata()
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value)
  return metadata
}

describe("a 0 in Envoy's or a Stainless SDK's timeout metadata is no deadline, not 0 ms left", () => {
  it('x-envoy-expected-rq-timeout-ms: 0 gets defaultMs and runs the handler, even under strict: not DEADLINE_EXCEEDED on arrival', async () => {
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const invalid = watch<GrpcServerInvalidHeaderMessage>(grpcChannels.serverInvalidHeader)
    const work = await serve({ defaultMs: 700, reserveMs: 0, strict: true })
    const result = await unary(
      work,
      {},
      {},
      metadataWith({ 'x-envoy-expected-rq-timeout-ms': '0' }),
    )
    expect(result.error?.code).toBeUndefined()
    expect(result.value).toEqual({ ok: true })
    expect(starts.messages[0]).toMatchObject({ source: 'default', budgetMs: 700 })
    expect(invalid.messages).toEqual([])
  })

  it('beside a grpc-timeout, the envoy 0 leaves the grpc-timeout to decide', async () => {
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const work = await serve({ reserveMs: 0 })
    const result = await unary(
      work,
      {},
      // Wall clock: it must outlast the first call's connect and round trip,
      // on a loaded box too (5 s was once too short in a full run: nothing
      // here measures time, so the margin costs nothing).
      { deadline: Date.now() + 30_000 },
      metadataWith({ 'x-envoy-expected-rq-timeout-ms': '0' }),
    )
    expect(result.error, String(result.error)).toBeUndefined()
    expect(result.value).toEqual({ ok: true })
    expect(starts.messages[0]!.source).toBe('grpc-timeout')
    expect(starts.messages[0]!.budgetMs).toBeGreaterThan(0)
    expect(starts.messages[0]!.budgetMs).toBeLessThanOrEqual(30_000)
  })

  it('x-stainless-timeout, when trusted, is read in seconds, and its 0 is no deadline', async () => {
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const work = await serve({
      defaultMs: 700,
      reserveMs: 0,
      strict: true,
      trust: ['x-stainless-timeout'],
    })
    const zero = await unary(work, {}, {}, metadataWith({ 'x-stainless-timeout': '0' }))
    const some = await unary(work, {}, {}, metadataWith({ 'x-stainless-timeout': '1.5' }))
    expect(zero.value).toEqual({ ok: true })
    expect(some.value).toEqual({ ok: true })
    expect(starts.messages.map((m) => [m.source, m.budgetMs])).toEqual([
      ['default', 700],
      ['x-stainless-timeout', 1500],
    ])
  })

  it('x-deadline-remaining-ms: 0 is still 0 ms left: DEADLINE_EXCEEDED on arrival', async () => {
    const work = await serve({ reserveMs: 0 })
    const result = await unary(work, {}, {}, metadataWith({ 'x-deadline-remaining-ms': '0' }))
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
  })
})
