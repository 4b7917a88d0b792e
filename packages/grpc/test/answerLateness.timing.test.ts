import { Metadata, type ServerWritableStream, status } from '@grpc/grpc-js'
import {
  adaptiveReserveMs,
  MAX_RESERVE_MS,
  MIN_RESERVE_MS,
  resetTimerLateness,
  timerLatenessMs,
} from '@hourglass/core'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { deadlineServerInterceptor, grpcChannels } from '../src/index.js'
import {
  connect,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// Its own file: what the reserve learns is process-wide.

/** Keep the event loop busy for `ms` (a CPU-bound handler elsewhere in the process). */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

let server: RunningServer | undefined
let client: WorkClientApi | undefined
// As a new process: each test starts with nothing learned.
beforeEach(() => resetTimerLateness())
afterEach(async () => {
  client?.close()
  await server?.close()
})

/**
 * The adaptive reserve learns from the DEADLINE_EXCEEDED answers this
 * server's own timer wrote, as @hourglass/express's from its 504s: how long
 * after the deadline each went out. Nothing reported them, so in a gRPC-only
 * process an answer held up by a busy loop never raised the reserve. Lower
 * bounds only: a busier machine makes the figures larger, never smaller.
 */
it('DEADLINE_EXCEEDED answers held 40 ms behind a busy loop raise the default reserve above 40 ms', async () => {
  // Published right after the status is handed to grpc-js, before it is
  // written: blocking there delays it as a busy loop would.
  const onExpire = () => block(40)
  try {
    server = await startServer(
      {
        unary() {
          // Never answers: the interceptor's own timer answers.
        },
      },
      [deadlineServerInterceptor()],
    )
    client = connect(server.address)
    // The connection is made first: its set-up is no answer's lateness.
    await unary(client, {}, { deadline: Date.now() + 5 })
    grpcChannels.serverExpire.subscribe(onExpire)
    expect(adaptiveReserveMs()).toBeLessThan(40)
    // Three short calls, well inside the event-loop monitor's first 1 s
    // window: what the reserve learns here comes from the answers themselves.
    for (let i = 0; i < 3; i++) {
      const metadata = new Metadata()
      metadata.set('x-deadline-remaining-ms', '60')
      const { error } = await unary(client, {}, {}, metadata)
      expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    }
    const reserve = adaptiveReserveMs()
    expect(reserve).toBeGreaterThanOrEqual(42)
    expect(reserve).toBeLessThanOrEqual(MAX_RESERVE_MS)
  } finally {
    grpcChannels.serverExpire.unsubscribe(onExpire)
  }
})

it('an answer that waited for messages the handler had written is not counted: that wait is the client reading them', async () => {
  const onExpire = () => block(40)
  try {
    server = await startServer(
      {
        serverStream(call: ServerWritableStream<unknown, unknown>) {
          call.write({ n: 1 }) // then never ends: the interceptor's timer does
        },
      },
      [deadlineServerInterceptor()],
    )
    client = connect(server.address)
    await unary(client, {}, { deadline: Date.now() + 5 })
    grpcChannels.serverExpire.subscribe(onExpire)
    expect(adaptiveReserveMs()).toBeLessThan(40)
    for (let i = 0; i < 3; i++) {
      const metadata = new Metadata()
      metadata.set('x-deadline-remaining-ms', '60')
      const stream = (client as WorkClientApi).serverStream({}, metadata, {})
      stream.on('data', () => {})
      stream.on('error', () => {}) // the status below is what the caller reads
      const ended = await new Promise<{ code: number }>((resolve) => stream.on('status', resolve))
      expect(ended.code).toBe(status.DEADLINE_EXCEEDED)
    }
    // Nothing learned from the answers: the reserve is the timer lateness's
    // alone (which the busy loop may have raised, on a slow run whose
    // event-loop window closed meanwhile).
    const reserve = adaptiveReserveMs()
    const fromTimers = Math.min(
      MAX_RESERVE_MS,
      Math.max(MIN_RESERVE_MS, Math.ceil(2 * timerLatenessMs() + 2)),
    )
    expect(reserve).toBe(fromTimers)
  } finally {
    grpcChannels.serverExpire.unsubscribe(onExpire)
  }
})
