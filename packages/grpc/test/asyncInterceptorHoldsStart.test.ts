import {
  type ClientUnaryCall,
  InterceptingCall,
  type Interceptor,
  Metadata,
  type ServerUnaryCall,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import type { GrpcClientEndMessage, GrpcClientStartMessage } from '../src/channels.js'
import { deadlineInterceptor, fromGrpcError, grpcChannels } from '../src/index.js'
import {
  connect,
  deferred,
  type Recording,
  type RunningServer,
  record,
  startServer,
  type UnaryResult,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// A common auth interceptor fetches a token before it starts the call. When
// the caller's deadline ended while it held start, the caller's callback was
// never called, in either order: with ours first, the cancel went down into a
// call grpc-js had not started (no listener: the status was dropped); with
// ours second, ours started the call anyway on a deadline already over.

let server: RunningServer | undefined
let client: WorkClientApi | undefined
const recordings: Recording<unknown>[] = []

afterEach(async () => {
  for (const recording of recordings.splice(0)) recording.stop()
  client?.close()
  await server?.close()
})

/** An interceptor whose start waits until the test releases it (a token being fetched). */
function heldStart(): { interceptor: Interceptor; reached: Promise<void>; release(): void } {
  const reached = deferred()
  const released = deferred()
  const interceptor: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        reached.resolve()
        void released.promise.then(() => next(metadata, listener))
      },
    })
  return { interceptor, reached: reached.promise, release: () => released.resolve() }
}

/** A server that records the `n` metadata of each call it gets, and answers OK at once. */
async function recordingServer(): Promise<string[]> {
  const arrived: string[] = []
  server = await startServer({
    unary: (call: { metadata: Metadata }, callback: (error: null, value: unknown) => void) => {
      arrived.push(String(call.metadata.get('n')[0]))
      callback(null, { ok: true })
    },
  })
  return arrived
}

function named(n: string): Metadata {
  const metadata = new Metadata()
  metadata.set('n', n)
  return metadata
}

function recordEvents() {
  const starts = record<GrpcClientStartMessage>(grpcChannels.clientStart)
  const ends = record<GrpcClientEndMessage>(grpcChannels.clientEnd)
  recordings.push(starts, ends)
  return { starts: starts.messages, ends: ends.messages }
}

/**
 * A later call on the same client and connection: once the server has it,
 * the first call's stream, had it been sent after its release, would have
 * been opened before it.
 */
async function barrier(): Promise<void> {
  const later = await unary(client!, {}, {}, named('later'))
  expect(later.error).toBeUndefined()
}

it("ours first: the caller's deadline ending while a later interceptor holds start fails the call, once, and it is never sent", async () => {
  const arrived = await recordingServer()
  const hold = heldStart()
  client = connect(server!.address, [deadlineInterceptor(), hold.interceptor])
  const events = recordEvents()
  const clock = new ManualClock()
  const deadline = Deadline.after(10_000, { clock })
  const result = runWithDeadline(deadline, () => unary(client!, {}, {}, named('held')))
  await hold.reached

  clock.advance(10_000) // the caller's deadline ends while the token is being fetched

  const { error } = await result
  expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
  expect(fromGrpcError(error)).toBe(deadline.reason)
  expect(events.ends.map((end) => end.outcome)).toEqual(['expired'])

  hold.release() // the token arrives: the call below starts, cancelled already
  await barrier()
  expect(arrived).toEqual(['later'])
  // Delivered once: no second end for the held call when it starts.
  const heldCall = events.starts[0]?.call
  expect(events.ends.filter((end) => end.call === heldCall)).toHaveLength(1)
})

it("ours first: the caller's deadline cancelled (the caller left) while a later interceptor holds start fails the call CANCELLED", async () => {
  const arrived = await recordingServer()
  const hold = heldStart()
  client = connect(server!.address, [deadlineInterceptor(), hold.interceptor])
  const deadline = Deadline.after(10_000, { clock: new ManualClock() })
  const result = runWithDeadline(deadline, () => unary(client!, {}, {}, named('held')))
  await hold.reached

  const left = new Error('client left')
  deadline.cancel(left)

  const { error } = await result
  expect(error?.code).toBe(status.CANCELLED)
  expect(fromGrpcError(error)).toBe(left)
  hold.release()
  await barrier()
  expect(arrived).toEqual(['later'])
})

it("ours second: a start held past the caller's deadline is refused DEADLINE_EXCEEDED, never sent", async () => {
  const arrived = await recordingServer()
  const hold = heldStart()
  client = connect(server!.address, [hold.interceptor, deadlineInterceptor()])
  const events = recordEvents()
  const clock = new ManualClock()
  const deadline = Deadline.after(10_000, { clock })
  const result = runWithDeadline(deadline, () => unary(client!, {}, {}, named('held')))
  await hold.reached

  clock.advance(10_000) // the caller's deadline ends before ours is started
  hold.release()

  const { error } = await result
  expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
  expect(fromGrpcError(error)).toBe(deadline.reason)
  expect(events.starts.map((start) => start.refused)).toEqual([true])
  expect(events.ends.map((end) => end.outcome)).toEqual(['refused'])
  await barrier()
  expect(arrived).toEqual(['later'])
})

/** A unary call and its result, for a test that cancels it. */
function cancellable(n: string): { cancel(): void; result: Promise<ServiceError | null> } {
  let call: ClientUnaryCall | undefined
  const result = new Promise<ServiceError | null>((resolve) => {
    call = client!.unary({}, named(n), {}, (error) => resolve(error))
  })
  return { cancel: () => call!.cancel(), result }
}

it('ours first: your call.cancel() while a later interceptor holds start fails the call CANCELLED, once, never sent', async () => {
  const arrived = await recordingServer()
  const hold = heldStart()
  client = connect(server!.address, [deadlineInterceptor(), hold.interceptor])
  const events = recordEvents()
  const call = cancellable('held')
  await hold.reached

  call.cancel()

  expect((await call.result)?.code).toBe(status.CANCELLED)
  hold.release()
  await barrier()
  expect(arrived).toEqual(['later'])
  const heldCall = events.starts[0]?.call
  expect(events.ends.filter((end) => end.call === heldCall)).toHaveLength(1)
})

it('ours second: your call.cancel() while an interceptor before ours holds start fails the call CANCELLED when it lets go, never sent', async () => {
  const arrived = await recordingServer()
  const hold = heldStart()
  client = connect(server!.address, [hold.interceptor, deadlineInterceptor()])
  const events = recordEvents()
  const call = cancellable('held')
  await hold.reached

  call.cancel()
  // A turn later: grpc-js has dropped the status of the cancelled call below,
  // which has no listener yet.
  await new Promise((resolve) => setImmediate(resolve))
  hold.release()

  expect((await call.result)?.code).toBe(status.CANCELLED)
  expect(events.starts.map((start) => start.refused)).toEqual([true])
  await barrier()
  expect(arrived).toEqual(['later'])
})

it("ours second: your call.cancel() before the caller's deadline ended, both while an interceptor before ours held start, is CANCELLED — the earlier event", async () => {
  await recordingServer()
  const hold = heldStart()
  client = connect(server!.address, [hold.interceptor, deadlineInterceptor()])
  const clock = new ManualClock()
  const deadline = Deadline.after(100, { clock })
  const call = runWithDeadline(deadline, () => cancellable('held'))
  await hold.reached

  call.cancel()
  await new Promise((resolve) => setImmediate(resolve))
  // The deadline ends too before the interceptor lets go: reported as
  // DEADLINE_EXCEEDED, the cancel read as the request's expiry (a 504).
  clock.advance(100)
  hold.release()

  expect((await call.result)?.code).toBe(status.CANCELLED)
  deadline.dispose()
})

it("ours first, client streaming: the caller's writes complete and the stream finishes when its deadline ends while a later interceptor holds start", async () => {
  server = await startServer({
    clientStream: (
      call: NodeJS.ReadableStream,
      callback: (error: null, value: unknown) => void,
    ) => {
      call.resume()
      call.on('end', () => callback(null, { ok: true }))
    },
  })
  const hold = heldStart()
  client = connect(server.address, [deadlineInterceptor(), hold.interceptor])
  const clock = new ManualClock()
  const deadline = Deadline.after(10_000, { clock })
  const status_ = deferred<number | undefined>()
  const call = runWithDeadline(deadline, () =>
    client!.clientStream(new Metadata(), {}, (error) => status_.resolve(error?.code)),
  )
  const written = [deferred(), deferred()]
  call.write({ n: 1 }, () => written[0]!.resolve())
  call.write({ n: 2 }, () => written[1]!.resolve())
  const finished = new Promise<void>((resolve) => call.once('finish', () => resolve()))
  call.end()
  await hold.reached

  clock.advance(10_000)

  expect(await status_.promise).toBe(status.DEADLINE_EXCEEDED)
  // They waited for good: held by the interceptor, then dropped by the
  // cancelled call below, their callbacks never ran, nor did 'finish'.
  await Promise.all(written.map((w) => w.promise))
  await finished
  hold.release()
})

it('ours second: a client closed while an interceptor before ours holds start fails the call UNAVAILABLE, where it hung', async () => {
  // Ours makes the call below at start, when grpc-js refuses one on a closed
  // channel by throwing: thrown into the holding interceptor's callback, it
  // would be uncaught. A call made before the close and started after it
  // waited for good without ours (for `defaultMs` with it).
  await recordingServer()
  const hold = heldStart()
  client = connect(server!.address, [hold.interceptor, deadlineInterceptor()])
  const events = recordEvents()
  const result = unary(client, {})
  await hold.reached
  client.close()
  hold.release()

  const { error } = await result
  expect(error?.code).toBe(status.UNAVAILABLE)
  expect(error?.details).toBe('not sent: Channel has been shut down')
  // Not sent, published as every call not sent is (refused, then an error end): it was
  // published not at all, and otel counted no CLIENT span and no error for it.
  expect(events.starts.map((s) => s.refused)).toEqual([true])
  expect(events.ends.map((e) => [e.code, e.outcome])).toEqual([[status.UNAVAILABLE, 'error']])
})

it('ours second: a parent call cancelled while an interceptor before ours holds start fails the child CANCELLED when it lets go, never sent', async () => {
  // grpc-js hears a parent's cancel from the moment it makes the call below;
  // ours makes it at start, after the parent's 'cancelled' had fired: the
  // child went out for a parent nobody waits for, and its server ran it.
  const arrived = await recordingServer()
  const hold = heldStart()
  client = connect(server!.address, [hold.interceptor, deadlineInterceptor()])
  const child = deferred<ServiceError | null>()
  const parentCancelled = deferred()
  const parent = await startServer({
    unary: (call: ServerUnaryCall<unknown, unknown>) => {
      call.on('cancelled', () => parentCancelled.resolve())
      client!.unary({}, named('child'), { parent: call }, (error) => child.resolve(error))
    },
  })
  const toParent = connect(parent.address)
  try {
    const outer = toParent.unary({}, new Metadata(), {}, () => {})
    await hold.reached
    outer.cancel()
    await parentCancelled.promise
    hold.release()

    const error = await child.promise
    expect(error?.code).toBe(status.CANCELLED)
    expect(error?.details).toBe('Cancelled by parent call')
    await barrier()
    expect(arrived).toEqual(['later'])
  } finally {
    toParent.close()
    await parent.close()
  }
})

it('a child made after its parent answered is sent, as without ours: grpc-js marks every answered call cancelled, and that end came before the child', async () => {
  // Read at start alone, `parent.cancelled` refused a follow-up call (an
  // audit, a cache fill) made after the parent's answer: never sent.
  const arrived = await recordingServer()
  client = connect(server!.address, [deadlineInterceptor()])
  const answered = deferred<ServerUnaryCall<unknown, unknown>>()
  const parent = await startServer({
    unary: (call: ServerUnaryCall<unknown, unknown>, callback: (e: null, v: unknown) => void) => {
      call.on('cancelled', () => answered.resolve(call))
      callback(null, {})
    },
  })
  const toParent = connect(parent.address)
  try {
    toParent.unary({}, new Metadata(), {}, () => {})
    const call = await answered.promise
    const child = await new Promise<ServiceError | null>((resolve) =>
      client!.unary({}, named('follow-up'), { parent: call }, (error) => resolve(error)),
    )
    expect(child).toBeNull()
    expect(arrived).toEqual(['follow-up'])
  } finally {
    toParent.close()
    await parent.close()
  }
})

it('ours second: a client closed in the same turn as a call whose start an interceptor before ours holds to the next tick fails the call UNAVAILABLE, nothing thrown into that interceptor', async () => {
  // From a macrotask (an I/O callback, a timer) the interceptor's next tick
  // ran before the microtask that told ours the client method had returned:
  // grpc-js's throw for the closed channel went into the interceptor's
  // callback, uncaught — the process crashed.
  await recordingServer()
  let thrown: unknown
  const nextTickHold: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        process.nextTick(() => {
          try {
            next(metadata, listener)
          } catch (error) {
            thrown = error
          }
        })
      },
    })
  client = connect(server!.address, [nextTickHold, deadlineInterceptor()])
  const result = new Promise<UnaryResult>((resolve) => {
    setImmediate(() => {
      void unary(client!, {}).then(resolve)
      client!.close()
    })
  })

  const { error } = await result
  expect(thrown).toBeUndefined()
  expect(error?.code).toBe(status.UNAVAILABLE)
  expect(error?.details).toBe('not sent: Channel has been shut down')
})

it('a call made on a client already closed throws where it is made, as without ours', async () => {
  await recordingServer()
  client = connect(server!.address, [deadlineInterceptor()])
  client.close()

  expect(() => client!.unary({}, new Metadata(), {}, () => {})).toThrow(
    'Channel has been shut down',
  )
})
