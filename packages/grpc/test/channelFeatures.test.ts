import {
  type ChannelOptions,
  type Client,
  connectivityState,
  Metadata,
  Server,
  ServerCredentials,
  type ServiceError,
  status,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js'
import { ClientClosedError, Deadline, isDeadlineExceeded, runWithDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { watchLoopStalls } from '../../../test/support/loopStalls.js'
import { fromGrpcError } from '../src/index.js'
import { channelHarness, countedDeadline } from './support/channelHarness.js'
import { type Arrival, arrival, deferred, startServer, unary, workService } from './support/grpc.js'

// What grpc-js does on its own between the interceptor and the wire — a
// service config's retries and hedging, waitForReady, many calls sharing a
// channel — as a user configures it, against real servers on 127.0.0.1.

const { serve, client, closeAfter } = channelHarness()

function serviceConfig(policy: Record<string, unknown>): ChannelOptions {
  return {
    'grpc.service_config': JSON.stringify({
      methodConfig: [{ name: [{ service: 'hourglass.test.Work' }], ...policy }],
    }),
  }
}

/** Resolves once the client's channel reaches `state` (it is asked to connect). */
function reaches(c: Client, state: connectivityState): Promise<void> {
  const channel = c.getChannel()
  return new Promise((resolve, reject) => {
    const check = () => {
      const now = channel.getConnectivityState(true)
      if (now === state) return resolve()
      channel.watchConnectivityState(now, Date.now() + 10_000, (error) =>
        error ? reject(error) : check(),
      )
    }
    check()
  })
}

async function bind(address: string, implementation: UntypedServiceImplementation) {
  const late = new Server()
  late.addService(workService, implementation)
  await new Promise<number>((resolve, reject) =>
    late.bindAsync(address, ServerCredentials.createInsecure(), (error, port) =>
      error ? reject(error) : resolve(port),
    ),
  )
  closeAfter(() => late.forceShutdown())
  return late
}

describe('deadlineInterceptor under grpc-js retries (service config retryPolicy)', () => {
  it("every attempt gets the caller's deadline as it then stands: each grpc-timeout is shorter than the last, and the call ends at the caller's deadline", async () => {
    const arrivals: Arrival[] = []
    let round = 0
    const server = await serve({
      unary(
        call: Parameters<typeof arrival>[0] & { request: { round?: number } },
        callback: (e: Partial<ServiceError>) => void,
      ) {
        // An attempt of an earlier round's call that was on its way: not this call's.
        if (call.request.round !== round) return
        arrivals.push(arrival(call))
        // The first attempt is answered UNAVAILABLE at once, so grpc-js
        // retries; the retry is never answered, so the call ends at the
        // caller's deadline. Answered on a 60 ms timer instead, a loaded box
        // ran that timer late enough that the budget was gone before any
        // retry was sent (one arrival: the test failed on the shared suite).
        if (arrivals.length === 1) callback({ code: status.UNAVAILABLE, details: 'try again' })
      },
    })
    const c = client(
      server.address,
      serviceConfig({
        retryPolicy: {
          maxAttempts: 5,
          initialBackoff: '0.01s',
          maxBackoff: '0.01s',
          backoffMultiplier: 1,
          retryableStatusCodes: ['UNAVAILABLE'],
        },
      }),
    )
    // Connected first: the 200 ms are for the attempts. On a loaded box the
    // first connection took them all, and no attempt reached the server.
    await reaches(c, connectivityState.READY)
    // The 200 ms must hold the first attempt, its answer, the backoff (up to
    // 10 ms) and a retry reaching the server: a loaded machine sometimes gave
    // this process less (a shared-suite run: one arrival). A call that no
    // retry reached shows nothing of the retries: it is made again, three
    // rounds at most (one round, 200 ms, unless the machine stalls). A client
    // that never retries still fails, every round.
    let ended: { error: ServiceError | undefined; deadline: Deadline }
    const helds: Array<() => number> = []
    let stalledMs = 0
    do {
      round++
      arrivals.length = 0
      const { deadline, held } = countedDeadline(200)
      helds.push(held)
      const stalls = watchLoopStalls()
      const { error } = await runWithDeadline(deadline, () => unary(c, { round }))
      stalledMs = stalls.stop()
      ended = { error, deadline }
    } while (arrivals.length < 2 && round < 3)
    const { error, deadline } = ended
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(deadline.done).toBe(true)
    expect(isDeadlineExceeded(fromGrpcError(error))).toBe(true)
    expect(arrivals.length).toBeGreaterThan(1)
    for (let i = 1; i < arrivals.length; i++) {
      // Read in the handler after the server stamped the deadline: a stall
      // of the loop in between shortens that attempt's figure by as much
      // (the back-off between attempts is 8–12 ms).
      expect(arrivals[i]!.grpcMs).toBeLessThan(arrivals[i - 1]!.grpcMs + stalledMs)
    }
    // The header is the first attempt's (see Limits): never less than a
    // retry's grpc-timeout — but for the first attempt's own, sent at once on
    // a connected channel: grpc-js rounds its timeout up to the whole ms
    // where the header is the whole ms left, rounded down (200 against 199),
    // and grpc-js works its timeout out on Date.now(), whole ms, where the
    // header is read on the monotonic clock: one ms more (a CI run read 196
    // against a header of 195).
    const header = Number(arrivals[0]!.header)
    for (const a of arrivals) {
      expect(a.header).toBe(arrivals[0]!.header)
      expect(a.grpcMs).toBeLessThanOrEqual(header + 2)
    }
    for (const held of helds) expect(held()).toBe(0)
  })

  it('hedged attempts are all cancelled at the server when the caller leaves', async () => {
    const started: Array<Promise<void>> = []
    const allStarted = deferred()
    const server = await serve({
      unary(call: { on(event: 'cancelled', listener: () => void): void }) {
        const cancelled = deferred()
        call.on('cancelled', () => cancelled.resolve())
        started.push(cancelled.promise)
        if (started.length === 3) allStarted.resolve()
      },
    })
    const c = client(
      server.address,
      serviceConfig({
        hedgingPolicy: { maxAttempts: 3, hedgingDelay: '0.01s', nonFatalStatusCodes: [] },
      }),
    )
    const { deadline, held } = countedDeadline(60_000)
    const answer = runWithDeadline(deadline, () => unary(c, {}))
    await allStarted.promise
    deadline.cancel(new ClientClosedError())
    const { error } = await answer
    expect(error?.code).toBe(status.CANCELLED)
    expect(fromGrpcError(error)).toBeInstanceOf(ClientClosedError)
    await Promise.all(started)
    expect(held()).toBe(0)
  })
})

describe('deadlineInterceptor with waitForReady', () => {
  async function freeAddress(): Promise<string> {
    const probe = await startServer({})
    await probe.close()
    return probe.address
  }
  const fastReconnect: ChannelOptions = {
    'grpc.initial_reconnect_backoff_ms': 20,
    'grpc.max_reconnect_backoff_ms': 20,
  }

  it("a call waiting for a server that starts late within the budget is answered, with the caller's deadline", async () => {
    const address = await freeAddress()
    const c = client(address, fastReconnect)
    await reaches(c, connectivityState.TRANSIENT_FAILURE)
    const { deadline, held } = countedDeadline(10_000)
    const answer = runWithDeadline(deadline, () =>
      unary(c, {}, {}, new Metadata({ waitForReady: true })),
    )
    await bind(address, {
      unary(call: Parameters<typeof arrival>[0], callback: (e: null, v: Arrival) => void) {
        callback(null, arrival(call))
      },
    })
    const { value, error } = await answer
    expect(error).toBeUndefined()
    // It went out with the caller's deadline (grpc-timeout, written when the stream opened) and header.
    expect((value as Arrival).grpcMs).toBeLessThanOrEqual(10_000)
    expect(Number((value as Arrival).header)).toBeLessThanOrEqual(10_000)
    expect(held()).toBe(0)
  })

  it('a call still waiting when the caller leaves is cancelled, and not sent when the server comes up', async () => {
    const address = await freeAddress()
    const c = client(address, fastReconnect)
    await reaches(c, connectivityState.TRANSIENT_FAILURE)
    const { deadline, held } = countedDeadline(60_000)
    const answer = runWithDeadline(deadline, () =>
      unary(c, {}, {}, new Metadata({ waitForReady: true })),
    )
    deadline.cancel(new ClientClosedError())
    const { error } = await answer
    expect(error?.code).toBe(status.CANCELLED)
    let handled = 0
    await bind(address, {
      unary(_call: unknown, callback: (e: null, v: unknown) => void) {
        handled++
        callback(null, {})
      },
    })
    // Another call on the same channel goes through: the cancelled one went nowhere before it.
    expect((await unary(c, {}, {}, new Metadata({ waitForReady: true }))).error).toBeUndefined()
    expect(handled).toBe(1)
    expect(held()).toBe(0)
  })
})

describe('deadlineInterceptor: metadata and many calls on one channel', () => {
  it("x-deadline-remaining-ms set by hand (twice) is replaced by the caller's budget, once, on a copy", async () => {
    const seen: string[][] = []
    const server = await serve({
      unary(call: { metadata: Metadata }, callback: (e: null, v: unknown) => void) {
        seen.push(call.metadata.get('x-deadline-remaining-ms').map(String))
        callback(null, {})
      },
    })
    const c = client(server.address)
    const metadata = new Metadata()
    metadata.add('x-deadline-remaining-ms', '99999')
    metadata.add('x-deadline-remaining-ms', '5')
    const deadline = Deadline.after(10_000)
    expect(
      (await runWithDeadline(deadline, () => unary(c, {}, {}, metadata))).error,
    ).toBeUndefined()
    expect(seen[0]).toHaveLength(1)
    expect(Number(seen[0]![0])).toBeLessThanOrEqual(10_000)
    expect(Number(seen[0]![0])).toBeGreaterThan(5)
    expect(metadata.get('x-deadline-remaining-ms')).toEqual(['99999', '5'])
  })

  it('concurrent calls on one channel each end by their own deadline, and release their hooks', async () => {
    const server = await serve({
      unary(call: { request: { answer: boolean } }, callback: (e: null, v: unknown) => void) {
        if (call.request.answer) callback(null, {})
        // The others are never answered: only their deadline ends them.
      },
    })
    const c = client(server.address)
    const calls = Array.from({ length: 40 }, (_, i) => {
      const short = i % 2 === 0
      const counted = countedDeadline(short ? 30 + i : 60_000)
      const answer = runWithDeadline(counted.deadline, () => unary(c, { answer: !short }))
      return { short, ...counted, answer }
    })
    for (const call of calls) {
      const { error } = await call.answer
      if (call.short) {
        expect(error?.code).toBe(status.DEADLINE_EXCEEDED)
        // Ended by its deadline; or, on a box that stalled while the 40 calls
        // were being made, refused unsent with less than `minBudgetMs` (5 ms)
        // of it left: its expiry told early, as the README's `minBudgetMs` has it.
        if (!call.deadline.done) expect(error?.details).toMatch(/^not sent, no budget left: /)
        expect(isDeadlineExceeded(fromGrpcError(error))).toBe(true)
      } else {
        expect(error).toBeUndefined()
        expect(call.deadline.done).toBe(false)
      }
      expect(call.held()).toBe(0)
    }
  })
})
