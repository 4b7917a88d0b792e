import {
  type ClientDuplexStream,
  type Metadata,
  Metadata as MetadataClass,
  ServerInterceptingCall,
  type ServerInterceptor,
  status,
} from '@grpc/grpc-js'
import { ManualClock } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import type {
  GrpcServerClientCancelledMessage,
  GrpcServerEndMessage,
  GrpcServerExpireMessage,
  GrpcServerStartMessage,
} from '../src/channels.js'
import {
  deadlineServerInterceptor,
  grpcChannels,
  type ServerDeadlineOptions,
} from '../src/index.js'
import {
  connect,
  deferred,
  type Recording,
  type RunningServer,
  rawUnary,
  record,
  startServer,
  type WorkClientApi,
} from './support/grpc.js'

// An async interceptor before ours (an auth check, where the README puts it)
// holds the metadata until the call is over: grpc-js's own grpc-timeout
// timer ends it, or the client cancels. The call never reached ours, so it
// published no server event at all — no start, no end — and
// @hourglass/otel, which builds the SERVER span from them, had no span for
// it and counted nothing: exactly the calls the check made too slow.

let server: RunningServer | undefined
let client: WorkClientApi | undefined
const recordings: Recording<unknown>[] = []

afterEach(async () => {
  for (const recording of recordings.splice(0)) recording.stop()
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
})

function recordServerEvents() {
  const starts = record<GrpcServerStartMessage>(grpcChannels.serverStart)
  const expires = record<GrpcServerExpireMessage>(grpcChannels.serverExpire)
  const cancels = record<GrpcServerClientCancelledMessage>(grpcChannels.serverClientCancelled)
  const ends = record<GrpcServerEndMessage>(grpcChannels.serverEnd)
  recordings.push(starts, expires, cancels, ends)
  return {
    starts: starts.messages,
    expires: expires.messages,
    cancels: cancels.messages,
    ends: ends.messages,
  }
}

/**
 * A server interceptor that holds the inbound metadata until the test
 * releases it. `cancelled` resolves once the call is over: grpc-js tells this
 * listener, then ours, in the same turn.
 */
function heldMetadata(): {
  interceptor: ServerInterceptor
  reached: Promise<void>
  cancelled: Promise<void>
  release(): void
} {
  const reached = deferred()
  const cancelled = deferred()
  let pass = () => {}
  const interceptor: ServerInterceptor = (_method, call) =>
    new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata: Metadata, next: (metadata: Metadata) => void) => {
            pass = () => next(metadata)
            reached.resolve()
          },
          onCancel: () => cancelled.resolve(),
        }),
    })
  return {
    interceptor,
    reached: reached.promise,
    cancelled: cancelled.promise,
    release: () => pass(),
  }
}

/** A server whose handlers count their runs, behind `hold` and then ours. */
async function heldServer(
  hold: ReturnType<typeof heldMetadata>,
  options: ServerDeadlineOptions,
): Promise<{ runs: number }> {
  const handler = { runs: 0 }
  server = await startServer(
    {
      unary: (_call: unknown, callback: (error: null, value: unknown) => void) => {
        handler.runs++
        callback(null, {})
      },
      bidi: () => {
        handler.runs++
      },
    },
    [hold.interceptor, deadlineServerInterceptor(options)],
  )
  return handler
}

it('a call grpc-js ends on its own timer while held before ours publishes its start, its expiry and its end, once', async () => {
  const clock = new ManualClock()
  const events = recordServerEvents()
  const hold = heldMetadata()
  const handler = await heldServer(hold, { clock, reserveMs: 0 })

  // A caller that runs no timer of its own: only grpc-js's server timer ends the call.
  const answer = rawUnary(server?.address ?? '', '/hourglass.test.Work/Unary', {
    'grpc-timeout': '300m',
  })
  await hold.reached
  clock.advance(400) // the auth check, past the call's budget
  expect((await answer).status).toBe(status.DEADLINE_EXCEEDED)
  await hold.cancelled

  expect(events.starts).toHaveLength(1)
  const [start] = events.starts
  expect(start).toMatchObject({
    method: '/hourglass.test.Work/Unary',
    source: 'grpc-timeout',
    remainingMs: 0,
    refused: false,
    mode: 'enforce',
  })
  // The grpc-timeout as the call arrived, in whole ms on the wall clock.
  expect(start?.budgetMs).toBeGreaterThan(0)
  expect(start?.budgetMs).toBeLessThanOrEqual(300)
  // The metadata never reached ours: an empty one stands in for it.
  expect(start?.metadata).toBeInstanceOf(MetadataClass)
  expect(events.expires).toEqual([
    {
      deadline: start?.deadline,
      method: '/hourglass.test.Work/Unary',
      budgetMs: start?.budgetMs,
      elapsedMs: 400,
      stage: 'arrival',
      action: 'status',
    },
  ])
  expect(events.cancels).toEqual([])
  expect(events.ends).toEqual([
    {
      deadline: start?.deadline,
      method: '/hourglass.test.Work/Unary',
      code: status.DEADLINE_EXCEEDED,
      elapsedMs: 400,
      outcome: 'expired',
    },
  ])

  // The check lets it through at last: grpc-js drops it, and nothing more is published.
  hold.release()
  expect(handler.runs).toBe(0)
  expect([events.starts, events.expires, events.ends].map((list) => list.length)).toEqual([1, 1, 1])
})

it('in observe mode too, a call grpc-js ends on its own timer while held is reported expired', async () => {
  const events = recordServerEvents()
  const hold = heldMetadata()
  await heldServer(hold, { mode: 'observe' })

  const answer = rawUnary(server?.address ?? '', '/hourglass.test.Work/Unary', {
    'grpc-timeout': '200m',
  })
  expect((await answer).status).toBe(status.DEADLINE_EXCEEDED)
  await hold.cancelled

  expect(events.starts).toHaveLength(1)
  expect(events.starts[0]).toMatchObject({ source: 'grpc-timeout', mode: 'observe' })
  expect(events.expires.map(({ stage, action }) => ({ stage, action }))).toEqual([
    { stage: 'arrival', action: 'status' },
  ])
  expect(events.ends.map(({ outcome, code }) => ({ outcome, code }))).toEqual([
    { outcome: 'expired', code: status.DEADLINE_EXCEEDED },
  ])
  expect(events.ends[0]?.deadline).toBe(events.starts[0]?.deadline)
})

it('a call the client cancels while held before ours publishes its start and a client-cancelled end, once', async () => {
  const clock = new ManualClock()
  const events = recordServerEvents()
  const hold = heldMetadata()
  const handler = await heldServer(hold, { clock, reserveMs: 0 })
  client = connect(server?.address ?? '')

  const answer = new Promise<{ code: number | undefined }>((resolve) => {
    const call = client?.unary(
      {},
      new MetadataClass(),
      { deadline: Date.now() + 60_000 },
      (error) => resolve({ code: error?.code }),
    )
    void hold.reached.then(() => {
      clock.advance(250) // the auth check, still within the budget
      call?.cancel()
    })
  })
  expect((await answer).code).toBe(status.CANCELLED)
  await hold.cancelled

  expect(events.starts).toHaveLength(1)
  const [start] = events.starts
  expect(start).toMatchObject({ source: 'grpc-timeout', refused: false })
  expect(start?.budgetMs).toBeGreaterThan(250)
  // Counted from the call's arrival, as an arrived call's deadline is.
  expect(start?.remainingMs).toBe((start?.budgetMs ?? 0) - 250)
  expect(events.expires).toEqual([])
  expect(events.cancels).toEqual([
    { deadline: start?.deadline, method: '/hourglass.test.Work/Unary', elapsedMs: 250 },
  ])
  expect(events.ends).toEqual([
    {
      deadline: start?.deadline,
      method: '/hourglass.test.Work/Unary',
      code: status.CANCELLED,
      elapsedMs: 250,
      outcome: 'client-cancelled',
    },
  ])
  // Whatever the call was doing on the caller's behalf is stopped.
  expect(start?.deadline.signal.aborted).toBe(true)

  hold.release()
  expect(handler.runs).toBe(0)
  expect([events.starts, events.cancels, events.ends].map((list) => list.length)).toEqual([1, 1, 1])
})

it('a bidi stream sent no deadline and cancelled while held has no budget, and ends client-cancelled', async () => {
  const events = recordServerEvents()
  const hold = heldMetadata()
  const handler = await heldServer(hold, {})
  client = connect(server?.address ?? '')

  const stream: ClientDuplexStream<unknown, unknown> = client.bidi(new MetadataClass(), {})
  const closed = new Promise<number | undefined>((resolve) =>
    stream.on('error', (error: { code?: number }) => resolve(error.code)),
  )
  await hold.reached
  stream.cancel()
  expect(await closed).toBe(status.CANCELLED)
  await hold.cancelled

  expect(events.starts).toHaveLength(1)
  expect(events.starts[0]).toMatchObject({
    method: '/hourglass.test.Work/Bidi',
    budgetMs: Number.POSITIVE_INFINITY,
    source: 'none',
  })
  expect(events.cancels).toHaveLength(1)
  expect(events.ends.map(({ outcome, code }) => ({ outcome, code }))).toEqual([
    { outcome: 'client-cancelled', code: status.CANCELLED },
  ])
  hold.release()
  expect(handler.runs).toBe(0)
  expect(events.ends).toHaveLength(1)
})

// The usual grpc-js auth interceptor (grpc-node's own example): before ours,
// as the README asks, it answers a call without a valid token itself,
// UNAUTHENTICATED, and never passes the metadata on. Ours never sees that
// status (it does not pass through us), and reported every such call as one
// whose client left: `server-client-cancelled`, then `server-end`
// `client-cancelled` with code CANCELLED — @hourglass/otel counted a caller
// that left and marked the span CANCELLED for each refused token.
it('a call an interceptor before ours answers itself (an auth check refusing it) is not reported as its client cancelling', async () => {
  const events = recordServerEvents()
  let refused = 0
  const auth: ServerInterceptor = (_method, call) =>
    new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata: Metadata, pass: (metadata: Metadata) => void) => {
            if (metadata.get('authorization')[0] === 'secret') return pass(metadata)
            refused++
            // Sync, and a turn later (a token checked against a store).
            const answer = () =>
              call.sendStatus({ code: status.UNAUTHENTICATED, details: 'Auth token invalid' })
            if (refused === 1) answer()
            else setImmediate(answer)
          },
        }),
    })
  const runs = { unary: 0 }
  server = await startServer(
    {
      unary: (_call: unknown, callback: (error: null, value: unknown) => void) => {
        runs.unary++
        callback(null, {})
      },
    },
    [auth, deadlineServerInterceptor()],
  )
  client = connect(server.address)
  const call = (metadata = new MetadataClass()) =>
    new Promise<number | undefined>((resolve) =>
      client?.unary({}, metadata, { deadline: Date.now() + 60_000 }, (error) =>
        resolve(error ? error.code : status.OK),
      ),
    )
  expect(await call()).toBe(status.UNAUTHENTICATED)
  expect(await call()).toBe(status.UNAUTHENTICATED)
  const authorized = new MetadataClass()
  authorized.set('authorization', 'secret')
  // A call that reaches ours after them: its events come after any of theirs.
  expect(await call(authorized)).toBe(status.OK)
  expect(runs.unary).toBe(1)

  // Only the call that reached ours is reported: ours never saw the
  // refusals' status, and neither client cancelled.
  expect(events.cancels).toEqual([])
  expect(events.ends.map(({ outcome, code }) => ({ outcome, code }))).toEqual([
    { outcome: 'ok', code: status.OK },
  ])
  expect(events.starts).toHaveLength(1)
})
