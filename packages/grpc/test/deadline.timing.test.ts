import { setTimeout as pause } from 'node:timers/promises'
import { type handleUnaryCall, status } from '@grpc/grpc-js'
import {
  ClientClosedError,
  currentDeadline,
  Deadline,
  isClientClosed,
  isDeadlineExceeded,
  runWithDeadline,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { watchLoopStalls } from '../../../test/support/loopStalls.js'
import {
  deadlineInterceptor,
  deadlineServerInterceptor,
  type GrpcServerStartMessage,
  grpcChannels,
} from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN
  return { median: at(0.5), p90: at(0.9), min: at(0), max: at(1) }
}

const show = (s: ReturnType<typeof stats>) =>
  `median ${s.median.toFixed(2)}, p90 ${s.p90.toFixed(2)}, min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)} ms`

let server: RunningServer | undefined
let client: WorkClientApi | undefined
afterEach(async () => {
  client?.close()
  await server?.close()
})

const runs = 30

describe('on time, over loopback HTTP/2', () => {
  it('the server answers DEADLINE_EXCEEDED within 50 ms after expiresAt − reserveMs (never early), and the handler signal aborts at that moment', async () => {
    // The server cuts each call to 80 ms (`maxMs`) and ends its handler
    // 60 ms before that (20 ms in): the client's own grpc-js timer (5 s) never races
    // the answer measured. (With the client's 90 ms deadline as the server's
    // budget, a transit or stall longer than the reserve let the client's
    // timer answer first, "Deadline exceeded after …", on a loaded box.)
    // Each run waits the 20 ms out: the lateness after it is the figure.
    const reserveMs = 60
    let abortedAt: number[] = []
    const handler: handleUnaryCall<unknown, unknown> = () => {
      // A handler that ignores time, except for noticing the abort.
      const deadline = currentDeadline()!
      deadline.signal.addEventListener('abort', () => {
        if (isDeadlineExceeded(deadline.signal.reason)) abortedAt.push(performance.now())
      })
    }
    server = await startServer({ unary: handler }, [
      deadlineServerInterceptor({ reserveMs, maxMs: 80 }),
    ])
    client = connect(server.address)

    // A control timer armed for the same instant as each answer: on a shared
    // 2-core box the event loop itself fires late, and what we add is the
    // difference. From when it fires, how long this process was then kept
    // from running (descheduled, which no timer shows) until the answer.
    const dueAt: number[] = []
    const controlAt: number[] = []
    const stalls: Array<{ stop(): number }> = []
    const onStart = ({ deadline }: GrpcServerStartMessage) => {
      const i = dueAt.length
      dueAt.push(deadline.expiresAt)
      setTimeout(() => {
        controlAt[i] = performance.now()
        stalls[i] = watchLoopStalls()
      }, deadline.expiresAt - performance.now())
    }
    // Connected and warm before measuring.
    await unary(client, {}, { deadline: Date.now() + 100 })
    abortedAt = []
    grpcChannels.serverStart.subscribe(onStart)
    const lateness: number[] = []
    const overControl: number[] = []
    const abortLag: number[] = []
    const stalled: number[] = []
    try {
      for (let i = 0; i < runs; i++) {
        // A plain grpc-js deadline: the server reads it from grpc-timeout (and cuts it to maxMs).
        const result = await unary(client, {}, { deadline: Date.now() + 5000 })
        const arrivedAt = performance.now()
        stalled.push(stalls[i]?.stop() ?? 0)
        expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
        // Ours, not grpc-js's client timer ("Deadline exceeded after …").
        expect(result.error?.details).toMatch(/^deadline exceeded: /)
        const due = dueAt[i]!
        lateness.push(arrivedAt - due)
        overControl.push(arrivedAt - Math.max(due, controlAt[i] ?? due))
        abortLag.push(abortedAt[i]! - Math.max(due, controlAt[i] ?? due))
      }
    } finally {
      grpcChannels.serverStart.unsubscribe(onStart)
      for (const watch of stalls) watch?.stop()
    }
    console.info(
      `DEADLINE_EXCEEDED after expiresAt − reserveMs: ${show(stats(lateness))}; ` +
        `beyond a plain timer: ${show(stats(overControl))}; signal abort lag beyond it ${show(stats(abortLag))}; ` +
        `process kept from running meanwhile: ${show(stats(stalled))}`,
    )
    expect(Math.min(...lateness)).toBeGreaterThanOrEqual(-1)
    // Each answer within 50 ms of the control, less any time the process was
    // descheduled after it (an answer the server forgot would come from the
    // client's 5 s timer: 4900 ms late, with grpc-js's message).
    expect(Math.max(...overControl.map((ms, i) => ms - stalled[i]!))).toBeLessThan(50)
    expect(stats(overControl).median).toBeLessThan(15)
    expect(Math.max(...abortLag.map((ms, i) => ms - stalled[i]!))).toBeLessThan(50)
  })

  it("the client ends a call DEADLINE_EXCEEDED within 50 ms of the caller's deadline, against a server that never answers", async () => {
    server = await startServer({ unary: (() => {}) satisfies handleUnaryCall<unknown, unknown> })
    client = connect(server.address, [deadlineInterceptor()])
    // The calls start 15 ms apart, up to three in flight on the channel, each
    // due at its own moment (and judged against its own control): one after
    // another, each waiting out its 40 ms, they were ~1.2 s of the serial
    // timing project; the process has nothing else to do meanwhile.
    const apartMs = 15
    const runsOut = await Promise.all(
      Array.from({ length: runs }, async (_, i) => {
        // Pacing the calls, not waiting for anything to happen.
        await pause(i * apartMs)
        // Each call waits this out: the lateness after it is the figure, not
        // its size. Far above the interceptor's minBudgetMs (5 ms), below
        // which the call would fail at once, early, with nothing sent.
        const deadline = Deadline.after(40)
        // The control, as in the server's test above: a plain timer due then,
        // and how long the process was kept from running after it.
        let control: { at: number; stalls: { stop(): number } } | undefined
        const armed = setTimeout(() => {
          control = { at: performance.now(), stalls: watchLoopStalls() }
        }, deadline.remaining())
        const result = await runWithDeadline(deadline, () => unary(client!, {}))
        const late = performance.now() - deadline.expiresAt
        clearTimeout(armed)
        const allowed = control
          ? Math.max(0, control.at - deadline.expiresAt) + control.stalls.stop()
          : 0
        expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
        return { late, judged: late - allowed }
      }),
    )
    const lateness = runsOut.map((r) => r.late)
    const judged = runsOut.map((r) => r.judged)
    console.info(
      `client DEADLINE_EXCEEDED after the caller's expiresAt: ${show(stats(lateness))}; beyond the control: ${show(stats(judged))}`,
    )
    // grpc-js rounds its deadline to whole ms and may fire up to 1 ms early.
    expect(Math.min(...lateness)).toBeGreaterThanOrEqual(-2)
    // Unenforced, a server that never answers holds the call forever.
    expect(Math.max(...judged)).toBeLessThan(50)
  })

  it("when the caller leaves, the server handler's deadline is cancelled (ClientClosedError) within 50 ms", async () => {
    let arrived = deferred()
    let stopped = deferred<number>()
    const handler: handleUnaryCall<unknown, unknown> = () => {
      currentDeadline()!.onDone((reason) => {
        if (isClientClosed(reason)) stopped.resolve(performance.now())
      })
      arrived.resolve()
    }
    server = await startServer({ unary: handler }, [deadlineServerInterceptor()])
    client = connect(server.address, [deadlineInterceptor()])
    const lags: number[] = []
    const stalled: number[] = []
    for (let i = 0; i < runs; i++) {
      arrived = deferred()
      stopped = deferred<number>()
      const caller = Deadline.after(10_000)
      const pending = runWithDeadline(caller, () => unary(client!, {}))
      await arrived.promise
      const leftAt = performance.now()
      // How long the process was kept from running while the cancel crossed loopback.
      const stalls = watchLoopStalls()
      caller.cancel(new ClientClosedError())
      lags.push((await stopped.promise) - leftAt)
      stalled.push(stalls.stop())
      expect((await pending).error?.code).toBe(status.CANCELLED)
    }
    console.info(
      `caller left → server handler stopped: ${show(stats(lags))}; process kept from running meanwhile: ${show(stats(stalled))}`,
    )
    // Not propagated, the handler would run to the caller's 10 s deadline.
    expect(Math.max(...lags.map((ms, i) => ms - stalled[i]!))).toBeLessThan(50)
  })
})
