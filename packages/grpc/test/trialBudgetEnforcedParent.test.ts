import { type handleUnaryCall, status } from '@grpc/grpc-js'
import {
  Deadline,
  isDeadlineExceeded,
  isExpiryOf,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadlineInterceptor, fromGrpcError } from '../src/index.js'
import {
  type Arrival,
  arrival,
  connect,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// A budget on trial inside an enforced request — an observe-only child of
// an enforcing deadline, `req.deadline.child(100, { observe: true })`, as
// core's README describes it — is ended when the request's deadline
// expires: the work under it is bounded by that deadline. The client read
// the trial's `observe` alone: past the trial's own time the call went out
// with no x-deadline-remaining-ms and no gRPC deadline (the server took its
// own default, a server that never answered was waited on until the
// request's end), and with 3 ms left on the request it was sent anyway. It
// is now sent, and refused, as under the request's deadline itself.

const cleanup: Array<() => unknown> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

async function setup(
  handler: handleUnaryCall<unknown, unknown>,
  options: Parameters<typeof deadlineInterceptor>[0] = { reserveMs: 0 },
): Promise<WorkClientApi> {
  const server: RunningServer = await startServer({ unary: handler })
  cleanup.push(() => server.close())
  const work = connect(server.address, [deadlineInterceptor(options)])
  cleanup.push(() => work.close())
  return work
}

/** An enforced request with `leftMs` left (of 10 s), and a budget on trial in it whose own time has passed. */
function trialUnder(leftMs: number) {
  const clock = new ManualClock()
  const request = Deadline.after(10_000, { clock })
  const trial = request.child(100, { observe: true })
  clock.advance(10_000 - leftMs)
  cleanup.push(() => {
    trial.dispose()
    request.dispose()
  })
  return { clock, request, trial }
}

function recorder(arrivals: Arrival[]): handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    arrivals.push(arrival(call))
    callback(null, {})
  }
}

describe('deadlineInterceptor under a budget on trial', () => {
  it('past the trial’s own time: the header and the gRPC deadline are what the request has left (less the reserve)', async () => {
    const arrivals: Arrival[] = []
    const work = await setup(recorder(arrivals), { reserveMs: 50 })
    // Seconds left: the gRPC deadline is grpc-js's, on the wall clock, and
    // the first call connects and is answered within it on a loaded machine
    // too (of 800 ms, 150 were seen gone before it arrived).
    const { trial } = trialUnder(5050)
    expect(trial.expired).toBe(true)
    const result = await runWithDeadline(trial, () => unary(work, {}))
    expect(result.error).toBeUndefined()
    expect(arrivals[0]?.header).toBe('5000')
    expect(arrivals[0]?.grpcMs).toBeLessThanOrEqual(5000)
    expect(arrivals[0]?.grpcMs).toBeGreaterThan(0)
  })

  it('within the trial’s own time: its own header (dark mode propagates it), the request’s gRPC deadline', async () => {
    const arrivals: Arrival[] = []
    const work = await setup(recorder(arrivals))
    const clock = new ManualClock()
    // 10 s: the request's gRPC deadline is on the wall clock (see above).
    using request = Deadline.after(10_000, { clock })
    using trial = request.child(100, { observe: true })
    clock.advance(40)
    const result = await runWithDeadline(trial, () => unary(work, {}))
    expect(result.error).toBeUndefined()
    expect(arrivals[0]?.header).toBe('60')
    expect(arrivals[0]?.grpcMs).toBeLessThanOrEqual(9960)
    expect(arrivals[0]?.grpcMs).toBeGreaterThan(0)
  })

  it('with under minBudgetMs left on the request: not sent, the request’s expiry', async () => {
    const arrivals: Arrival[] = []
    const work = await setup(recorder(arrivals))
    const { request, trial } = trialUnder(3)
    const result = await runWithDeadline(trial, () => unary(work, {}))
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.details).toMatch(/^not sent, no budget left: /)
    const reason = fromGrpcError(result.error)
    expect(isDeadlineExceeded(reason)).toBe(true)
    expect(isExpiryOf(reason, request)).toBe(true)
    expect(arrivals).toEqual([])
  })

  it('a server that never answers is cut at the request’s deadline, reported as its expiry', async () => {
    const work = await setup(() => {}) // never answers
    const { request, trial } = trialUnder(30)
    const result = await runWithDeadline(trial, () => unary(work, {}))
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    const reason = fromGrpcError(result.error)
    expect(isDeadlineExceeded(reason)).toBe(true)
    expect(isExpiryOf(reason, request)).toBe(true)
  }, 5000)

  it('unchanged: dark mode throughout, past its time, sends no header, no gRPC deadline, refuses nothing', async () => {
    const arrivals: Arrival[] = []
    const work = await setup(recorder(arrivals))
    const clock = new ManualClock()
    using dark = Deadline.after(100, { clock, observe: true })
    using step = dark.child(50)
    clock.advance(100)
    const result = await runWithDeadline(step, () => unary(work, {}))
    expect(result.error).toBeUndefined()
    expect(arrivals).toEqual([{ grpcMs: Number.POSITIVE_INFINITY, header: undefined }])
  })
})
