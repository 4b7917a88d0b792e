import {
  Metadata,
  ServerInterceptingCall,
  type ServerInterceptor,
  type ServerWritableStream,
  status,
} from '@grpc/grpc-js'
import {
  adaptiveReserveMs,
  MAX_RESERVE_MS,
  MIN_RESERVE_MS,
  resetTimerLateness,
  timerLatenessMs,
} from '@hourglass/core'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { deadlineServerInterceptor } from '../src/index.js'
import {
  connect,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// Its own file: what the reserve learns is process-wide.

/** How long the interceptor before ours holds each status on its way out, ms. */
const HOLD_MS = 45
/** The least lateness a held answer is counted with (a timer may fire a ms early). */
const HELD_AT_LEAST_MS = 40

/**
 * An interceptor before ours that holds every status for HOLD_MS on a timer
 * before passing it on (a slow audit log, a metrics flush): the answer goes
 * out late while the event loop stays idle. A busy loop would make it late
 * too, but the event-loop monitor sees that as timer lateness, and once its
 * 1 s window closed (a slow run) the reserve rose from that alone: the test
 * passed with no answer counted at all.
 */
const holdStatus: ServerInterceptor = (_method, call) =>
  new ServerInterceptingCall(call, {
    sendStatus: (sent, next) => {
      setTimeout(() => next(sent), HOLD_MS)
    },
  })

/** The reserve the timer lateness alone gives, at `now`. */
function fromTimers(now: number): number {
  return Math.min(MAX_RESERVE_MS, Math.max(MIN_RESERVE_MS, Math.ceil(2 * timerLatenessMs(now) + 2)))
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
it('DEADLINE_EXCEEDED answers held 45 ms on their way out raise the default reserve by that much', async () => {
  server = await startServer(
    {
      unary() {
        // Never answers: the interceptor's own timer answers.
      },
    },
    [holdStatus, deadlineServerInterceptor()],
  )
  client = connect(server.address)
  // The connection is made first: its set-up is no answer's lateness. (Its
  // answer is grpc-js's own timer's, held too, but not ours: not counted.)
  await unary(client, {}, { deadline: Date.now() + 5 })
  expect(adaptiveReserveMs()).toBeLessThan(HELD_AT_LEAST_MS)
  // Only x-deadline-remaining-ms: no grpc-timeout, so grpc-js's own timer
  // never answers in ours' place.
  for (let i = 0; i < 3; i++) {
    const metadata = new Metadata()
    metadata.set('x-deadline-remaining-ms', '60')
    const { error } = await unary(client, {}, {}, metadata)
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
  }
  // Read at one instant: what the timers alone give, and the reserve, which
  // counts the answers' lateness on top of the timers'. Whatever the timer
  // lateness of a noisy run, the answers' part shows only if they were
  // counted: from the timers alone (2 × lateness + 2) it reaches this
  // only with a lateness of HELD_AT_LEAST_MS or more, on a loop kept idle
  // (and a run that late reads the 100 ms ceiling either way).
  const now = performance.now()
  const late = timerLatenessMs(now)
  const reserve = adaptiveReserveMs(now)
  expect(reserve).toBeGreaterThanOrEqual(
    Math.min(MAX_RESERVE_MS, Math.ceil(HELD_AT_LEAST_MS + late + 2)),
  )
  expect(reserve).toBeLessThanOrEqual(MAX_RESERVE_MS)
})

it('an answer that waited for messages the handler had written is not counted: that wait is the client reading them', async () => {
  server = await startServer(
    {
      serverStream(call: ServerWritableStream<unknown, unknown>) {
        call.write({ n: 1 }) // then never ends: the interceptor's timer does
      },
    },
    [holdStatus, deadlineServerInterceptor()],
  )
  client = connect(server.address)
  await unary(client, {}, { deadline: Date.now() + 5 })
  expect(adaptiveReserveMs()).toBeLessThan(HELD_AT_LEAST_MS)
  for (let i = 0; i < 3; i++) {
    const metadata = new Metadata()
    metadata.set('x-deadline-remaining-ms', '60')
    const stream = (client as WorkClientApi).serverStream({}, metadata, {})
    stream.on('data', () => {})
    stream.on('error', () => {}) // the status below is what the caller reads
    const ended = await new Promise<{ code: number }>((resolve) => stream.on('status', resolve))
    expect(ended.code).toBe(status.DEADLINE_EXCEEDED)
  }
  // Nothing learned from the answers, held as long as the unary ones above:
  // the reserve is the timer lateness's alone, read at the same instant.
  const now = performance.now()
  expect(adaptiveReserveMs(now)).toBe(fromTimers(now))
})
