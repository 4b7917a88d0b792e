import {
  Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceError,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js'
import {
  currentDeadline,
  Deadline,
  DeadlineExceededError,
  isDeadlineExceeded,
  isExpiryOf,
  MAX_RESERVE_MS,
  ManualClock,
  markExpiryOf,
  markForeignExpiry,
  runWithDeadline,
} from '@hourglass/core'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import {
  deadlineErrors,
  deadlineInterceptor,
  deadlineServerInterceptor,
  fromGrpcError,
  type ServerDeadlineOptions,
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

type Unary = ServerUnaryCall<unknown, unknown>

async function serve(
  handler: (call: Unary, callback: sendUnaryData<unknown>) => void,
  options: ServerDeadlineOptions = {},
) {
  server = await startServer(deadlineErrors({ unary: handler }), [
    deadlineServerInterceptor(options),
  ])
  client = connect(server.address, [deadlineInterceptor()])
  return client
}

/**
 * A server whose work ran out of a deadline of its own (a 20 ms cap on a
 * step, as a job's read back by fromJobError), with the caller's time left.
 */
const ownCapRanOut = (_call: Unary, callback: sendUnaryData<unknown>) => {
  const cap = Deadline.after(20)
  cap.onDone(() => callback(cap.reason as never))
}

// A deadline error of no relation to the call's deadline, while that one
// still has its time, is passed on by the server's deadlineErrors() as any
// other error (grpc-js: UNKNOWN, its message as details), as express's
// deadlineErrors() passes it on with next(error). As DEADLINE_EXCEEDED with
// the "do not retry" trailer, the caller answered 504 `x-deadline-expired`
// 42 ms into a 3 s request; a DEADLINE_EXCEEDED without it could not be told
// from a handler's own for its line's end (answered early by the reserves
// of the hops behind it), which is the caller's expiry.
describe("a server's deadline error of its own while the call's deadline has its time", () => {
  it("is no expiry of the call: UNKNOWN with the error's message, and no deadline error at the caller", async () => {
    const work = await serve(ownCapRanOut)
    const request = Deadline.after(60_000)
    onTestFinished(() => request.dispose())
    const { error } = await runWithDeadline(request, () => unary(work, {}))
    expect(error?.code).toBe(status.UNKNOWN)
    expect(error?.details).toMatch(/deadline/i)
    expect(error?.metadata.get('x-deadline-expired')).toEqual([])
    const reason = fromGrpcError(error)
    expect(isDeadlineExceeded(reason)).toBe(false)
  })

  it('through Express: passed on with next(error), no 504, no x-deadline-expired, no expire event', async () => {
    const work = await serve(ownCapRanOut)
    const { res, passedOn, expired } = await throughExpress((res, next) =>
      work.unary({}, new Metadata(), {}, (err, value) =>
        err ? next(fromGrpcError(err)) : res.json(value),
      ),
    )
    expect(res.status).toBe(502)
    expect(res.headers.get('x-deadline-expired')).toBeNull()
    expect(expired).toHaveLength(0)
    expect(isDeadlineExceeded(passedOn[0])).toBe(false)
  })

  it("an unrelated deadline's error (a job's, read back by fromJobError) is passed on: UNKNOWN, no x-deadline-expired trailer", async () => {
    const unrelated = Deadline.never()
    const work = await serve((_call, callback) =>
      callback(
        markExpiryOf(
          new DeadlineExceededError({ budgetMs: 300, elapsedMs: 300 }),
          unrelated,
        ) as never,
      ),
    )
    const { error } = await unary(work, {})
    expect(error?.code).toBe(status.UNKNOWN)
    expect(error?.metadata.get('x-deadline-expired')).toEqual([])
  })

  it('without deadlineServerInterceptor, an expiry marked as from elsewhere is passed on: UNKNOWN, no trailer; an unmarked one is still DEADLINE_EXCEEDED', async () => {
    // No deadline of the call's to ask isExpiryOf about: the mark still tells
    // (as express's deadlineErrors() without deadline()). Answered, a remote's
    // own cap was DEADLINE_EXCEEDED with x-deadline-expired (do not retry).
    let marked = true
    server = await startServer(
      deadlineErrors({
        unary: (_call: Unary, callback: sendUnaryData<unknown>) => {
          const expiry = new DeadlineExceededError({ budgetMs: 50, elapsedMs: 50 })
          callback((marked ? markForeignExpiry(expiry) : expiry) as never)
        },
      }),
      [],
    )
    client = connect(server.address, [deadlineInterceptor()])
    const foreign = await unary(client, {})
    expect(foreign.error?.code).toBe(status.UNKNOWN)
    expect(foreign.error?.metadata.get('x-deadline-expired')).toEqual([])
    marked = false
    const own = await unary(client, {})
    expect(own.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(own.error?.metadata.get('x-deadline-expired')).toEqual(['1'])
  })

  it("a backend's status for a cap of the handler's own, passed on as grpc-js gave it (callback(err), or rejected), is answered as fromGrpcError(err): UNKNOWN, not the backend's x-deadline-expired", async () => {
    // The backend, a Hourglass server too, never answers: its deadline (the
    // 50 ms cap the handler put on that call, less its 10 ms reserve) does,
    // DEADLINE_EXCEEDED with x-deadline-expired: 1. Forwarded raw, that
    // status and trailer reached the caller, which took it for its own 60 s
    // budget gone (an Express edge: 504 "do not retry").
    const backend = await startServer({ unary() {} }, [
      deadlineServerInterceptor({ reserveMs: 10 }),
    ])
    const toBackend = connect(backend.address, [deadlineInterceptor()])
    onTestFinished(async () => {
      toBackend.close()
      await backend.close()
    })
    const capped = () => unary(toBackend, {}, { deadline: Date.now() + 50 })
    let rejects = false
    const work = await serve((_call, callback) => {
      // An async handler awaiting the call rejects with the status.
      if (rejects)
        return capped().then(({ error }) => {
          throw error
        })
      void capped().then(({ error }) => callback(error as never))
    })
    const request = Deadline.after(60_000)
    onTestFinished(() => request.dispose())
    for (const how of ['callback', 'rejected'] as const) {
      rejects = how === 'rejected'
      const { error } = await runWithDeadline(request, () => unary(work, {}))
      expect({ how, code: error?.code }).toEqual({ how, code: status.UNKNOWN })
      expect(error?.metadata.get('x-deadline-expired')).toEqual([])
      expect(isDeadlineExceeded(fromGrpcError(error))).toBe(false)
    }
  })

  it("a server-streaming handler that relays that status with call.emit('error', err) answers it as callback(err) does: UNKNOWN, not the backend's x-deadline-expired", async () => {
    // grpc-node's idiom for a streaming handler's failure. Relayed raw, the
    // caller, 60 s left, got DEADLINE_EXCEEDED with x-deadline-expired: 1
    // and fromGrpcError read it as its own expiry (an Express edge: 504 "do
    // not retry" 50 ms into the request).
    const backend = await startServer({ unary() {} }, [
      deadlineServerInterceptor({ reserveMs: 10 }),
    ])
    const toBackend = connect(backend.address, [deadlineInterceptor()])
    server = await startServer(
      deadlineErrors({
        serverStream: (call: ServerWritableStream<unknown, unknown>) => {
          void unary(toBackend, {}, { deadline: Date.now() + 50 }).then(({ error }) =>
            call.emit('error', error),
          )
        },
      }),
      [deadlineServerInterceptor()],
    )
    client = connect(server.address, [deadlineInterceptor()])
    onTestFinished(async () => {
      toBackend.close()
      await backend.close()
    })
    const request = Deadline.after(60_000)
    onTestFinished(() => request.dispose())
    const error = await runWithDeadline(
      request,
      () =>
        new Promise<ServiceError>((resolve) => {
          const stream = client!.serverStream({}, new Metadata(), {})
          stream.on('data', () => {})
          stream.on('error', resolve)
        }),
    )
    expect(error.code).toBe(status.UNKNOWN)
    expect(error.metadata.get('x-deadline-expired')).toEqual([])
    expect(isDeadlineExceeded(fromGrpcError(error))).toBe(false)
  })

  it("a rewritten backend status goes out with none of the backend's trailers: its grpc-status-details-bin (code 4) would contradict the UNKNOWN sent", async () => {
    // gRPC clients read a google.rpc.Status in grpc-status-details-bin in
    // place of grpc-status (grpc-go) or refuse one whose code differs
    // (grpc-java): forwarded, the backend's DEADLINE_EXCEEDED came back.
    const richStatus = Buffer.from([0x08, 0x04]) // google.rpc.Status { code: 4 }
    const backend = await startServer({
      unary: (_call: Unary, callback: sendUnaryData<unknown>) => {
        const trailer = new Metadata()
        trailer.set('x-deadline-expired', '1')
        trailer.set('grpc-status-details-bin', richStatus)
        callback({ code: status.DEADLINE_EXCEEDED, details: 'too slow', metadata: trailer })
      },
    })
    const toBackend = connect(backend.address, [deadlineInterceptor()])
    onTestFinished(async () => {
      toBackend.close()
      await backend.close()
    })
    // A cap of the handler's own: the backend's answer is no expiry of the call.
    const capped = () => unary(toBackend, {}, { deadline: Date.now() + 5000 })
    const work = await serve((_call, callback) => {
      void capped().then(({ error }) => callback(error as never))
    })
    const { error } = await unary(work, {})
    expect(error?.code).toBe(status.UNKNOWN)
    expect(error?.metadata.get('grpc-status-details-bin')).toEqual([])
    expect(error?.metadata.get('x-deadline-expired')).toEqual([])
  })

  it("within MAX_RESERVE_MS of the call's end it is the call's expiry: DEADLINE_EXCEEDED with the trailer", async () => {
    const clock = new ManualClock()
    const work = await serve(
      (_call, callback) => {
        // The call's deadline (the 1000 ms sent less the 10 ms reserve) has
        // at most 90 ms left.
        clock.advance(900)
        expect(currentDeadline()!.remaining()).toBeLessThanOrEqual(MAX_RESERVE_MS)
        callback(
          markForeignExpiry(new DeadlineExceededError({ budgetMs: 300, elapsedMs: 300 })) as never,
        )
      },
      { clock },
    )
    // The caller's budget: under a cap of the server's own (maxMs) the
    // trailer would not go (ownDeadlineNotCallers.test.ts).
    const { error } = await unary(work, {}, { deadline: Date.now() + 1000 })
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(error?.metadata.get('x-deadline-expired')).toEqual(['1'])
  })

  it("the server's own deadline running out still sends the trailer", async () => {
    const work = await serve(
      (_call, callback) => {
        const own = currentDeadline()!
        own.onDone(() => callback(own.reason as never))
      },
      { reserveMs: 1500 },
    )
    // It answers 1.5 s before the 2 s sent: well before grpc-js's own timer,
    // by more than a loaded machine can put between the two (150 ms of 200
    // was the margin before, the first call's connect included).
    const { error } = await unary(work, {}, { deadline: Date.now() + 2000 })
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(error?.metadata.get('x-deadline-expired')).toEqual(['1'])
  })

  it("the budget sent running out on the server is still the caller's expiry", async () => {
    // The server answers its own deadline's end, the budget this call sent
    // less its reserve: before the budget sent has run out here.
    const work = await serve(
      (_call, callback) => {
        const own = currentDeadline()!
        own.onDone(() => callback(own.reason as never))
      },
      { reserveMs: 150 },
    )
    const request = Deadline.after(300)
    onTestFinished(() => request.dispose())
    const { error } = await runWithDeadline(request, () => unary(work, {}))
    const reason = fromGrpcError(error)
    expect(isDeadlineExceeded(reason)).toBe(true)
    expect(isExpiryOf(reason, request)).toBe(true)
  })
})
