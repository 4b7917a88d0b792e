import { setImmediate as realTurn } from 'node:timers'
import {
  credentials,
  type handleBidiStreamingCall,
  type handleClientStreamingCall,
  type handleServerStreamingCall,
  Metadata,
  makeGenericClientConstructor,
  type ServerInterceptor,
} from '@grpc/grpc-js'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { cancelOnDestroy, deadlineInterceptor, deadlineServerInterceptor } from '../src/index.js'
import {
  connect,
  type RunningServer,
  startServer,
  type WorkClientApi,
  workService,
} from './support/grpc.js'

// A test of the app's own that fakes timers (`vi.useFakeTimers()`, to drive
// its retry backoff or cache expiry) while it uploads to a real gRPC server.
// The package runs its loop turns on node:timers' own setImmediate so fake
// timers do not stall it: the server's held half-close (ServerCall#halfClose)
// and cancelOnDestroy's deferred cancel used the global one, which fake
// timers replace: an upload's `end` never reached its handler, and a stream
// destroyed in the turn it was made was never cancelled.

let server: RunningServer | undefined
let work: WorkClientApi | undefined
afterEach(async () => {
  vi.useRealTimers()
  work?.close()
  await server?.close()
})

/** Up to `max` turns of the real event loop (node:timers, not faked), until `done()`: no time is waited on. */
async function realTurnsUntil(done: () => boolean, max = 5000): Promise<void> {
  for (let i = 0; i < max && !done(); i++) await new Promise<void>((r) => realTurn(r))
}

async function setUp(interceptors: ServerInterceptor[]): Promise<void> {
  const clientStream: handleClientStreamingCall<unknown, unknown> = (call, callback) => {
    let got = 0
    call.on('data', () => got++)
    call.on('end', () => callback(null, { got }))
  }
  const bidi: handleBidiStreamingCall<unknown, unknown> = (call) => {
    call.on('data', (m) => call.write(m))
    call.on('end', () => call.end())
  }
  server = await startServer({ clientStream, bidi }, interceptors)
  work = connect(server.address, [deadlineInterceptor()])
  // Connected with real timers (grpc-js's connect uses them): only the call runs under fake ones.
  await new Promise<void>((resolve, reject) =>
    work!.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())),
  )
  vi.useFakeTimers()
}

async function upload(): Promise<unknown> {
  let outcome: unknown = 'no answer'
  const call = work!.clientStream(new Metadata(), {}, (error, value) => {
    outcome = error ? `${error.code} ${error.details}` : value
  })
  call.write({ n: 1 })
  call.write({ n: 2 })
  call.end()
  await realTurnsUntil(() => outcome !== 'no answer')
  return outcome
}

describe('a client-streaming or bidi call while the app fakes timers', () => {
  it('without the server interceptor: the handler gets end and answers (control)', async () => {
    await setUp([])
    expect(await upload()).toEqual({ got: 2 })
  })

  it('with deadlineServerInterceptor: the handler gets end and answers as well', async () => {
    await setUp([deadlineServerInterceptor()])
    // With the global setImmediate (before the fix): 'no answer' — the
    // half-close waited on a faked one, and the handler never saw `end`
    // until the test moved fake time.
    expect(await upload()).toEqual({ got: 2 })
  })

  it('with deadlineServerInterceptor: a bidi echo ends', async () => {
    await setUp([deadlineServerInterceptor()])
    const call = work!.bidi(new Metadata(), {})
    const got: unknown[] = []
    let status: number | undefined
    call.on('data', (m) => got.push(m))
    call.on('status', (s) => {
      status = s.code
    })
    call.on('error', () => {})
    call.write({ n: 1 })
    call.end()
    await realTurnsUntil(() => status !== undefined)
    expect({ got, status }).toEqual({ got: [{ n: 1 }], status: 0 })
  })
})

describe('cancelOnDestroy while the app fakes timers', () => {
  it('a stream destroyed in the turn it was made is still cancelled: the server sees it', async () => {
    let cancelled = false
    let started = false
    const serverStream: handleServerStreamingCall<unknown, unknown> = (call) => {
      started = true
      call.on('cancelled', () => {
        cancelled = true
      })
      call.write({ n: 1 })
    }
    server = await startServer({ serverStream })
    const WorkClient = makeGenericClientConstructor(workService, 'Work')
    work = new WorkClient(server.address, credentials.createInsecure(), {
      callInvocationTransformer: cancelOnDestroy,
      'grpc.use_local_subchannel_pool': 1,
    }) as unknown as WorkClientApi
    await new Promise<void>((resolve, reject) =>
      work!.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())),
    )
    vi.useFakeTimers()
    const stream = work.serverStream({}, new Metadata(), {})
    stream.on('error', () => {})
    // Given up at once (a pipeline() handed an aborted signal).
    stream.destroy()
    await realTurnsUntil(() => cancelled)
    // With the global setImmediate (before the fix): started, never
    // cancelled — the cancel waited on a faked one, and the server streamed
    // on, never told.
    expect({ started, cancelled }).toEqual({ started: true, cancelled: true })
  })
})
