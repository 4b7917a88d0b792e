import { once } from 'node:events'
import { Metadata, type ServerWritableStream, status } from '@grpc/grpc-js'
import {
  currentDeadline,
  Deadline,
  isDeadlineExceeded,
  isExpiryOf,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import {
  deadlineErrors,
  deadlineInterceptor,
  deadlineServerInterceptor,
  fromGrpcError,
} from '../src/index.js'
import {
  connect,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'
import { throughExpress } from './support/throughExpress.js'

let server: RunningServer | undefined
let client: WorkClientApi | undefined

afterEach(async () => {
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
})

/** A server that never answers: only a deadline ends its calls. */
async function silentServer(): Promise<WorkClientApi> {
  server = await startServer({ unary: () => {} }, [deadlineServerInterceptor()])
  client = connect(server.address, [deadlineInterceptor()])
  return client
}

// A call's own `deadline` option shorter than the caller's is a cap of the
// app's on that one call, as a `Deadline.after(100)` around a lookup is: the
// README says its DEADLINE_EXCEEDED is that deadline's. Left unmarked, core
// counts an error of no known deadline as the caller's own, and Express's
// deadlineErrors() answered 504 `x-deadline-expired: 1` (and an expire event)
// ~100 ms into a 60 s request.
describe("a DEADLINE_EXCEEDED under a gRPC deadline that was not the caller's (a shorter one of the call's own, defaultMs)", () => {
  it("while the caller's deadline has its time, is no expiry of the caller's: an unrelated deadline's", async () => {
    const work = await silentServer()
    const request = Deadline.after(60_000)
    onTestFinished(() => request.dispose())
    const { error } = await runWithDeadline(request, () =>
      unary(work, {}, { deadline: Date.now() + 100 }),
    )
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    const reason = fromGrpcError(error)
    expect(isDeadlineExceeded(reason)).toBe(true)
    expect(isExpiryOf(reason, request)).toBe(false)
  })

  it('through Express: passed on with next(error), no 504, no x-deadline-expired, no expire event', async () => {
    const work = await silentServer()
    const { res, passedOn, expired } = await throughExpress((res, next) =>
      work.unary({}, new Metadata(), { deadline: Date.now() + 100 }, (err, value) =>
        err ? next(fromGrpcError(err)) : res.json(value),
      ),
    )
    expect(res.status).toBe(502)
    expect(res.headers.get('x-deadline-expired')).toBeNull()
    expect(expired).toHaveLength(0)
    expect(isDeadlineExceeded(passedOn[0])).toBe(true)
  })

  it("with no caller's deadline at all, it is left as it was: a deadline error of no known deadline", async () => {
    const work = await silentServer()
    const { error } = await unary(work, {}, { deadline: Date.now() + 50 })
    const reason = fromGrpcError(error)
    expect(isDeadlineExceeded(reason)).toBe(true)
    // No deadline of anyone's claims it, so any deadline would take it for its own.
    const unrelated = Deadline.after(60_000)
    onTestFinished(() => unrelated.dispose())
    expect(isExpiryOf(reason, unrelated)).toBe(true)
  })

  it("defaultMs running out under a server stream's deadline with no expiry is no expiry of that stream", async () => {
    const reasons: unknown[] = []
    const streamDeadlines: (Deadline | undefined)[] = []
    const inner = deadlineInterceptor({ defaultMs: 100 })
    server = await startServer(
      {
        unary: () => {},
        serverStream: (call: ServerWritableStream<unknown, unknown>) => {
          streamDeadlines.push(currentDeadline())
          const backend = connect(server!.address, [inner])
          backend.unary({}, new Metadata(), {}, (error) => {
            reasons.push(fromGrpcError(error))
            backend.close()
            call.end()
          })
        },
      },
      [deadlineServerInterceptor()],
    )
    client = connect(server.address, [deadlineInterceptor()])
    const stream = client.serverStream({}, new Metadata(), {})
    stream.on('data', () => {})
    await once(stream, 'end')
    const [watch] = streamDeadlines
    expect(watch?.expiresAt).toBe(Number.POSITIVE_INFINITY)
    expect(isDeadlineExceeded(reasons[0])).toBe(true)
    expect(isExpiryOf(reasons[0], watch!)).toBe(false)
  })

  it("under the caller's deadline (no shorter one of its own) it is still the caller's expiry", async () => {
    const work = await silentServer()
    const request = Deadline.after(150)
    onTestFinished(() => request.dispose())
    const { error } = await runWithDeadline(request, () => unary(work, {}))
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(isExpiryOf(fromGrpcError(error), request)).toBe(true)
  })
})

// The wire says a DEADLINE_EXCEEDED with `x-deadline-expired: 1` is the
// caller's budget gone too. A server's own cap is not: `maxMs` below what
// the caller sent, or `defaultMs` for a call that sent none. With the
// trailer, a caller with 5 s cut at 200 ms by `maxMs` took the status for
// its own expiry (isExpiryOf true with 4.8 s left: an Express edge answered
// 504 "do not retry").
describe("the server's own cap running out is not the caller's expiry: DEADLINE_EXCEEDED without the trailer", () => {
  /** A server on a ManualClock whose handler never answers; resolves once the handler runs. */
  async function hungServer(options: Parameters<typeof deadlineServerInterceptor>[0]) {
    let running: () => void = () => {}
    const started = new Promise<void>((resolve) => {
      running = resolve
    })
    server = await startServer({ unary: () => running() }, [deadlineServerInterceptor(options)])
    // In an object: a promise returned from an async function would be awaited with it.
    return { started }
  }

  it("maxMs below the caller's budget: no trailer, and not the caller's expiry", async () => {
    const clock = new ManualClock()
    const { started } = await hungServer({ clock, maxMs: 200, reserveMs: 10 })
    client = connect(server!.address, [deadlineInterceptor()])
    const request = Deadline.after(5000)
    onTestFinished(() => request.dispose())
    const pending = runWithDeadline(request, () => unary(client!, {}))
    await started
    clock.advance(190)
    const { error } = await pending
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(error?.details).toContain('this server allows a call (maxMs')
    expect(error?.metadata.get('x-deadline-expired')).toEqual([])
    const reason = fromGrpcError(error)
    expect(isDeadlineExceeded(reason)).toBe(true)
    expect(isExpiryOf(reason, request)).toBe(false)
  })

  it('defaultMs for a call that sent no deadline: no trailer', async () => {
    const clock = new ManualClock()
    const { started } = await hungServer({ clock, defaultMs: 200, reserveMs: 10 })
    client = connect(server!.address)
    const pending = unary(client, {})
    await started
    clock.advance(190)
    const { error } = await pending
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(error?.metadata.get('x-deadline-expired')).toEqual([])
  })

  it("the caller's own budget (its header, less the reserve) still sends the trailer: the caller's expiry", async () => {
    const clock = new ManualClock()
    const { started } = await hungServer({ clock, reserveMs: 10 })
    client = connect(server!.address, [deadlineInterceptor()])
    const request = Deadline.after(5000)
    onTestFinished(() => request.dispose())
    const pending = runWithDeadline(request, () => unary(client!, {}))
    await started
    clock.advance(5000)
    const { error } = await pending
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(error?.metadata.get('x-deadline-expired')).toEqual(['1'])
    expect(isExpiryOf(fromGrpcError(error), request)).toBe(true)
  })

  it("a handler's status with the trailer, on a call under the server's own cap, goes out without it", async () => {
    const trailer = new Metadata()
    trailer.set('x-deadline-expired', '1')
    trailer.set('x-kept', 'yes')
    server = await startServer(
      {
        unary: (_call: unknown, callback: (error: unknown) => void) =>
          callback({ code: status.DEADLINE_EXCEEDED, details: 'relayed', metadata: trailer }),
      },
      [deadlineServerInterceptor({ maxMs: 1000 })],
    )
    client = connect(server.address, [deadlineInterceptor()])
    const request = Deadline.after(5000)
    onTestFinished(() => request.dispose())
    const { error } = await runWithDeadline(request, () => unary(client!, {}))
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(error?.metadata.get('x-deadline-expired')).toEqual([])
    expect(error?.metadata.get('x-kept')).toEqual(['yes'])
    expect(isExpiryOf(fromGrpcError(error), request)).toBe(false)
  })

  // The caller sends 5 s either way, on the wall clock grpc-js's own timer
  // reads: a caller's 160 ms had to cover the first call's connect and its
  // round trip on a loaded machine, where grpc-js's timer answers (with no
  // trailer) first. The call's time is run down on the server's clock.
  it.each([
    {
      left: "with 4.9 s of the caller's left: the trailer (a division of the caller's budget)",
      leftMs: undefined,
      marked: ['1'],
    },
    { left: 'within MAX_RESERVE_MS of the end: the trailer', leftMs: 150, marked: ['1'] },
  ])(
    "a deadline made under the call's (child(100)) running out $left",
    async ({ leftMs, marked }) => {
      const clock = new ManualClock()
      let running: () => void = () => {}
      const started = new Promise<void>((resolve) => {
        running = resolve
      })
      server = await startServer(
        deadlineErrors({
          unary: (_call: unknown, callback: (error: unknown) => void) => {
            const call = currentDeadline()!
            // `leftMs` left of the call's deadline (the 5 s sent less the
            // 10 ms reserve) when the lookup starts: 50 when it runs out.
            if (leftMs !== undefined) clock.advance(call.remaining() - leftMs)
            // A lookup given 100 ms of the call's deadline.
            const lookup = call.child(100)
            lookup.signal.addEventListener('abort', () => callback(lookup.reason), { once: true })
            running()
          },
        }),
        [deadlineServerInterceptor({ clock, reserveMs: 10 })],
      )
      client = connect(server.address, [deadlineInterceptor()])
      const request = Deadline.after(5000)
      onTestFinished(() => request.dispose())
      const pending = runWithDeadline(request, () => unary(client!, {}))
      await started
      clock.advance(100)
      const { error } = await pending
      expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
      expect(error?.metadata.get('x-deadline-expired')).toEqual(marked)
    },
  )

  it("observe mode changes no answer: a handler's status with the trailer keeps it under maxMs", async () => {
    const trailer = new Metadata()
    trailer.set('x-deadline-expired', '1')
    server = await startServer(
      {
        unary: (_call: unknown, callback: (error: unknown) => void) =>
          callback({ code: status.DEADLINE_EXCEEDED, details: 'relayed', metadata: trailer }),
      },
      [deadlineServerInterceptor({ maxMs: 1000, mode: 'observe' })],
    )
    client = connect(server.address, [deadlineInterceptor()])
    const request = Deadline.after(5000)
    onTestFinished(() => request.dispose())
    const { error } = await runWithDeadline(request, () => unary(client!, {}))
    expect(error?.metadata.get('x-deadline-expired')).toEqual(['1'])
  })
})
