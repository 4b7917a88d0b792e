import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import * as grpc from '@grpc/grpc-js'
import {
  currentDeadline,
  Deadline,
  DeadlineExceededError,
  isDeadlineExceeded,
  ManualClock,
  markForeignExpiry,
  runWithDeadline,
} from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { deadlineInterceptor, deadlineServerInterceptor, fromGrpcError } from '@hourglass/grpc'
import {
  DelayedError,
  type Job,
  type JobsOptions,
  WaitingChildrenError,
  WaitingError,
  Worker,
} from 'bullmq'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import {
  addWithDeadline,
  type BullmqEndMessage,
  bullmqChannels,
  isJobDeadlineExceeded,
  JobDeadlineExceededError,
  withDeadline,
} from '../src/index.js'
import { collect, finished, signal } from './support/observe.js'
import {
  available,
  redisClockPasses,
  redisNowMs,
  storedExpiry,
  useRedisQueues,
} from './support/redisQueues.js'

// No assertion here races the machine's speed. A producer's deadline is on a
// ManualClock where its budget is checked: it does not move while the job is
// added, so the budget stored is exactly the one given, however loaded the
// machine (a real 300 ms deadline lost 139 ms to a loaded box before Redis
// stored it). A job's time runs out on the Redis server's clock, which no
// test can move: a test that needs it to pass waits until Redis says it has
// (redisClockPasses), and bounds on what a worker finds left allow seconds.

/** A gRPC service with one unary method, JSON on the wire (no .proto needed). */
const Slow = grpc.makeGenericClientConstructor(
  {
    never: {
      path: '/hourglass.test.Slow/Never',
      requestStream: false,
      responseStream: false,
      requestSerialize: (value: unknown) => Buffer.from(JSON.stringify(value)),
      requestDeserialize: (bytes: Buffer) => JSON.parse(bytes.toString()),
      responseSerialize: (value: unknown) => Buffer.from(JSON.stringify(value)),
      responseDeserialize: (bytes: Buffer) => JSON.parse(bytes.toString()),
    },
  },
  'Slow',
)
interface SlowClient extends grpc.Client {
  never(request: unknown, callback: (error: grpc.ServiceError | null) => void): void
}

describe.skipIf(!available)('withDeadline: a worker enforces the deadline a job carries', () => {
  const redis = useRedisQueues()

  /** A client of a `Slow` service that never answers, under `interceptors`; closed after the test. */
  const slowService = async (interceptors: grpc.ServerInterceptor[]): Promise<SlowClient> => {
    const grpcServer = new grpc.Server({ interceptors })
    grpcServer.addService(Slow.service, { never() {} })
    const port = await new Promise<number>((resolve, reject) =>
      grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    )
    const client = new Slow(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      interceptors: [deadlineInterceptor()],
      // Its own connection, not one grpc-js shares by address with a
      // closed server's (a port the OS handed out again).
      'grpc.use_local_subchannel_pool': 1,
    }) as unknown as SlowClient
    onTestFinished(() => {
      client.close()
      grpcServer.forceShutdown()
    })
    return client
  }

  /** The next attempt's `end` message. */
  const nextEnd = (): Promise<BullmqEndMessage> => {
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(function onEnd(message) {
      bullmqChannels.end.unsubscribe(onEnd)
      ended.resolve(message)
    })
    return ended.promise
  }

  it('a job whose deadline passed while it waited never runs: failed with deadline_exceeded, not retried, counted and reported', async () => {
    const { queue, events, name } = await redis.queue()
    const expired = collect(bullmqChannels.expire)
    const deadline = Deadline.after(100, { clock: new ManualClock() })
    const job = await addWithDeadline(queue, 'late', { n: 1 }, { deadline, attempts: 3 })
    // The worker is away until the job's deadline has passed where it is kept.
    await redisClockPasses(redis.client(), storedExpiry(job))

    let calls = 0
    const processor = withDeadline(async () => {
      calls++
    })
    redis.worker(name, processor)
    const result = await finished(job, events, queue)

    expect(calls).toBe(0)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ of q\d+-\d+ reached a worker \d+ ms after its deadline \(added with 100 ms left\); not run$/,
    )
    expect(result.attemptsMade).toBe(1) // attempts: 3, and no retry
    expect(processor.counts).toEqual({ expired: 1, stopped: 0, retriesDropped: 0 })
    expect(expired).toEqual([
      expect.objectContaining({
        jobId: job.id,
        queue: name,
        name: 'late',
        budgetMs: 100, // what the job was added with
        remainingMs: 0,
        attempt: 1,
        stalled: false,
        observe: false,
        outcome: 'expired',
      }),
    ])
    expect(expired[0]!.lateMs).toBeGreaterThanOrEqual(0)
  })

  it('a running job has the deadline as currentDeadline() and as its signal; at the deadline the signal aborts and the job fails with deadline_exceeded, not retried', async () => {
    const { queue, events, name } = await redis.queue()
    const clock = new ManualClock()
    const started = signal<{ deadline: Deadline | undefined; signal: AbortSignal | undefined }>()
    const processor = withDeadline(
      async (_job, _token, jobSignal) => {
        started.resolve({ deadline: currentDeadline(), signal: jobSignal })
        await once(jobSignal!, 'abort')
        throw jobSignal!.reason
      },
      { clock },
    )
    redis.worker(name, processor)
    const job = await addWithDeadline(
      queue,
      'slow',
      {},
      { deadline: Deadline.after(60_000, { clock: new ManualClock() }), attempts: 3 },
    )

    const inside = await started.promise
    expect(inside.deadline).toBeInstanceOf(Deadline)
    // The time spent getting here (real time on the Redis clock) is gone from
    // it: never more than the 60 s it was added with, and not all of it gone.
    expect(inside.deadline!.remaining()).toBeGreaterThan(30_000)
    expect(inside.deadline!.remaining()).toBeLessThanOrEqual(60_000)
    expect(inside.signal!.aborted).toBe(false)

    // The deadline's timer is armed on whole milliseconds (never early): one more reaches it.
    clock.advance(inside.deadline!.remaining() + 1)
    expect(inside.signal!.aborted).toBe(true)
    expect(isDeadlineExceeded(inside.signal!.reason)).toBe(true)

    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ .* was stopped by its deadline \(added with \d+ ms left\): deadline exceeded/,
    )
    expect(result.attemptsMade).toBe(1)
    expect(processor.counts).toEqual({ expired: 0, stopped: 1, retriesDropped: 0 })
    expect(clock.pendingTimers).toBe(0)
  })

  it("a job its deadline ends keeps the processor's stack in its stacktrace (what Bull Board shows), after the worker's own: stopped, or its retry dropped", async () => {
    const { queue, events, name } = await redis.queue()
    const clock = new ManualClock()
    const running = signal<Deadline>()
    // Named, so its frame is told apart in the stack BullMQ stores.
    async function renderReport(job: Job, jobSignal: AbortSignal): Promise<never> {
      if (job.name === 'flaky') throw new Error('upstream 503')
      if (job.name === 'gave-up') {
        // An abort of its own, not the deadline's: where it was is the news.
        const own = new AbortController()
        own.abort()
        throw own.signal.reason
      }
      running.resolve(currentDeadline()!)
      await once(jobSignal, 'abort')
      throw new Error('render interrupted')
    }
    redis.worker(
      name,
      withDeadline((job, _token, jobSignal) => renderReport(job, jobSignal!), { clock }),
    )
    const deadline = Deadline.after(60_000, { clock: new ManualClock() })
    const stopped = await addWithDeadline(queue, 'slow', {}, { deadline })
    clock.advance((await running.promise).remaining() + 1)
    const dropped = await addWithDeadline(
      queue,
      'flaky',
      {},
      { deadline, attempts: 3, backoff: { type: 'fixed', delay: 120_000 } },
    )
    const gaveUp = await addWithDeadline(
      queue,
      'gave-up',
      {},
      { deadline, attempts: 3, backoff: { type: 'fixed', delay: 120_000 } },
    )
    for (const [job, cause] of [
      [stopped, 'Error: render interrupted'],
      [dropped, 'Error: upstream 503'],
      [gaveUp, 'AbortError: This operation was aborted'],
    ] as const) {
      expect(await finished(job, events, queue)).toMatchObject({ state: 'failed' })
      const [trace] = (await queue.getJob(job.id!))!.stacktrace ?? []
      expect(trace).toMatch(/^UnrecoverableError: deadline_exceeded: /)
      expect(trace).toContain(`\nCaused by: ${cause}\n`)
      expect(trace).toMatch(/at renderReport \(.*withDeadline\.test\.ts:\d+/)
    }
  })

  it("a job whose processor rejects with its deadline's own error keeps the worker's trace alone: that stack is the timer's, not the processor's", async () => {
    const { queue, events, name } = await redis.queue()
    const clock = new ManualClock()
    const running = signal<Deadline>()
    redis.worker(
      name,
      withDeadline(
        async (_job, _token, jobSignal) => {
          running.resolve(currentDeadline()!)
          await once(jobSignal!, 'abort')
          // What fetch or timers/promises given the job's signal reject with.
          throw jobSignal!.reason
        },
        { clock },
      ),
    )
    const job = await addWithDeadline(queue, 'slow', {}, { deadline: Deadline.after(60_000) })
    clock.advance((await running.promise).remaining() + 1)
    expect(await finished(job, events, queue)).toMatchObject({ state: 'failed' })
    const [trace] = (await queue.getJob(job.id!))!.stacktrace ?? []
    expect(trace).toMatch(/^UnrecoverableError: deadline_exceeded: /)
    expect(trace).not.toContain('Caused by:')
  })

  describe('outbound calls inside a job', () => {
    let server: Server | undefined
    afterEach(async () => {
      if (!server) return
      server.closeAllConnections()
      await new Promise((resolve) => server!.close(resolve))
      server = undefined
    })

    it('createFetch inside the processor carries what is left and is stopped at the job deadline: the slow server sees the request abandoned', async () => {
      const arrived = signal<IncomingMessage>()
      const closed = signal()
      server = createServer((req) => {
        arrived.resolve(req)
        req.socket.once('close', () => closed.resolve())
        // never answers
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const port = (server.address() as { port: number }).port

      const { queue, events, name } = await redis.queue()
      const starts = collect(bullmqChannels.start)
      const clock = new ManualClock()
      const fetch = createFetch()
      let thrown: unknown
      const processor = withDeadline(
        async () => {
          try {
            await fetch(`http://127.0.0.1:${port}/slow`)
          } catch (error) {
            thrown = error
            throw error
          }
        },
        { clock },
      )
      redis.worker(name, processor)
      const job = await addWithDeadline(queue, 'call', {}, { deadline: Deadline.after(5_000) })

      const req = await arrived.promise
      // The next hop is told what the job has left: on the worker's manual
      // clock nothing has moved since the attempt started.
      const sent = Number(req.headers['x-deadline-remaining-ms'])
      expect(starts).toHaveLength(1)
      expect(sent).toBe(starts[0]!.remainingMs)
      expect(sent).toBeGreaterThan(0)
      expect(sent).toBeLessThanOrEqual(5_000)

      // Under createFetch's 10 s headers limit, so the deadline is what ends the call.
      clock.advance(5_001)
      await closed.promise
      const result = await finished(job, events, queue)
      expect(result.failedReason).toMatch(/^deadline_exceeded: .* was stopped by its deadline/)
      expect(thrown).toBeInstanceOf(DeadlineExceededError)
      await fetch.close()
    })

    it("a gRPC DEADLINE_EXCEEDED of the job's deadline, with 100 ms or less of it left, stops the job (raw or read with fromGrpcError): not retried into calls that arrive expired", async () => {
      // The service keeps 40 ms back to answer in (a fixed reserveMs; the
      // default is 10–100 ms): it answers DEADLINE_EXCEEDED, with
      // x-deadline-expired: 1, that long before the budget sent ends. On a
      // loaded box grpc-js's own timer on that budget may answer first: a
      // status of the job's deadline either way, and the rule is the same.
      const client = await slowService([deadlineServerInterceptor({ reserveMs: 40 })])

      const { queue, events, name } = await redis.queue()
      const ends = collect(bullmqChannels.end)
      // The worker's clock is moved so that each attempt calls with 90 ms of
      // the job's deadline left; the service's answer comes in real time.
      const clock = new ManualClock()
      let runs = 0
      const processor = withDeadline(
        async (job: Job) => {
          runs++
          clock.advance(currentDeadline()!.remaining() - 90)
          const error = await new Promise<grpc.ServiceError>((resolve) =>
            client.never({}, (e) => resolve(e!)),
          )
          expect(error.code).toBe(grpc.status.DEADLINE_EXCEEDED)
          // As grpc-js hands it over, or read back with fromGrpcError.
          throw job.name === 'raw' ? error : fromGrpcError(error)
        },
        { clock },
      )
      redis.worker(name, processor)
      for (const jobName of ['raw', 'told']) {
        const job = await addWithDeadline(
          queue,
          jobName,
          {},
          { deadline: Deadline.after(20_000), attempts: 5 },
        )
        const result = await finished(job, events, queue)
        // One attempt, one call. Retried with those 90 ms (no back-off), the
        // job called the service five times, each call answered
        // DEADLINE_EXCEEDED, and failed with the last status's message: a
        // plain error to its producer (500, not 504), counted nowhere.
        expect(result.state).toBe('failed')
        expect(result.attemptsMade).toBe(1)
        expect(result.failedReason).toMatch(
          /^deadline_exceeded: job \S+ of \S+ was stopped by its deadline \(added with \d+ ms left\): /,
        )
      }
      expect(runs).toBe(2)
      expect(ends.map((e) => [e.name, e.outcome])).toEqual([
        ['raw', 'deadline_exceeded'],
        ['told', 'deadline_exceeded'],
      ])
      expect(processor.counts).toEqual({ expired: 0, stopped: 2, retriesDropped: 0 })
    })

    it("a DEADLINE_EXCEEDED near the job's end that is not its deadline's (a shorter deadline of the call's own, an expiry marked foreign) is an ordinary failure: retried", async () => {
      const client = await slowService([])
      const { queue, events, name } = await redis.queue()
      const ends = collect(bullmqChannels.end)
      const clock = new ManualClock()
      const processor = withDeadline(
        async (job: Job) => {
          clock.advance(currentDeadline()!.remaining() - 90)
          if (job.name === 'foreign') {
            // As fromJobError gives for a child job's own cap, say.
            throw markForeignExpiry(new DeadlineExceededError({ budgetMs: 50, elapsedMs: 50 }))
          }
          // The call's own 30 ms cap runs out (the job's 90 ms do not): the
          // server never answers.
          const error = await runWithDeadline(
            Deadline.after(30),
            () => new Promise<grpc.ServiceError>((resolve) => client.never({}, (e) => resolve(e!))),
          )
          expect(error.code).toBe(grpc.status.DEADLINE_EXCEEDED)
          throw job.name === 'raw' ? error : fromGrpcError(error)
        },
        { clock },
      )
      redis.worker(name, processor)
      for (const jobName of ['raw', 'told', 'foreign']) {
        const job = await addWithDeadline(
          queue,
          jobName,
          {},
          { deadline: Deadline.after(20_000), attempts: 2 },
        )
        const result = await finished(job, events, queue)
        // Retried once, then failed with the processor's error as it was.
        // Before, the raw status (not the one read back) stopped the job.
        expect(result.state).toBe('failed')
        expect(result.attemptsMade).toBe(2)
        expect(result.failedReason).not.toMatch(/^deadline_exceeded/)
      }
      expect(ends.map((e) => [e.name, e.outcome])).toEqual([
        ['raw', 'retry'],
        ['raw', 'failed'],
        ['told', 'retry'],
        ['told', 'failed'],
        ['foreign', 'retry'],
        ['foreign', 'failed'],
      ])
      expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
    })
  })

  it("BullMQ's own cancel still reaches the processor: worker.cancelJob aborts its signal, and the failure is BullMQ's, not deadline_exceeded", async () => {
    const { queue, events, name } = await redis.queue()
    const started = signal()
    const processor = withDeadline(async (_job, _token, jobSignal) => {
      started.resolve()
      await once(jobSignal!, 'abort')
      throw new Error(`cancelled: ${String(jobSignal!.reason)}`)
    })
    const worker = redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'cancel-me', {}, { deadline: Deadline.after(60_000) })
    await started.promise
    expect(worker.cancelJob(job.id!, 'operator said so')).toBe(true)

    const result = await finished(job, events, queue)
    expect(result.failedReason).toBe('cancelled: operator said so')
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
  })

  it('a failed attempt is retried when the back-off leaves time: the next attempt runs and completes', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    let calls = 0
    const processor = withDeadline(async () => {
      if (++calls === 1) throw new Error('upstream 503')
      return 'ok'
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(
      queue,
      'flaky',
      {},
      { deadline: Deadline.after(20_000), attempts: 3, backoff: { type: 'fixed', delay: 50 } },
    )
    const result = await finished(job, events, queue)
    expect(result).toMatchObject({ ok: true, value: 'ok', state: 'completed', attemptsMade: 2 })
    expect(ends.map((e) => [e.attempt, e.outcome])).toEqual([
      [1, 'retry'],
      [2, 'completed'],
    ])
    expect(processor.counts.retriesDropped).toBe(0)
  })

  it('a failed attempt is not retried when its back-off would end after the deadline: failed with deadline_exceeded at once, cause kept, counted', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    let calls = 0
    let failure: unknown
    const processor = withDeadline(async () => {
      calls++
      throw new Error('upstream 503')
    })
    const worker = redis.worker(name, processor)
    worker.on('failed', (_job, error) => {
      failure = error
    })
    const job = await addWithDeadline(
      queue,
      'flaky',
      {},
      { deadline: Deadline.after(5_000), attempts: 3, backoff: { type: 'fixed', delay: 60_000 } },
    )
    const result = await finished(job, events, queue)
    expect(calls).toBe(1)
    expect(result.state).toBe('failed') // not delayed for a minute
    expect(result.attemptsMade).toBe(1)
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ .* failed with \d+ ms left \(added with \d+ ms left\) and its next attempt, after 60000 ms, would not fit; not retried: upstream 503$/,
    )
    expect(isJobDeadlineExceeded(failure)).toBe(true)
    expect((failure as JobDeadlineExceededError).stage).toBe('retry')
    expect((failure as Error).cause).toEqual(new Error('upstream 503'))
    expect(ends.map((e) => e.outcome)).toEqual(['no_time_to_retry'])
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 1 })
  })

  it("an error of the processor's own named RateLimitError (an upstream's 429) is a failure as any other, as BullMQ reads it (a rate limit is told by its message): its retry past the deadline is dropped, not reported deferred", async () => {
    const { queue, events, name } = await redis.queue()
    const ended = nextEnd()
    class RateLimitError extends Error {
      override name = 'RateLimitError'
    }
    const processor = withDeadline(async () => {
      throw new RateLimitError('upstream 429')
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(
      queue,
      'flaky',
      {},
      { deadline: Deadline.after(5_000), attempts: 3, backoff: { type: 'fixed', delay: 60_000 } },
    )
    // Before: `deferred`, and BullMQ, which saw a plain failure, delayed the job a minute.
    expect((await ended).outcome).toBe('no_time_to_retry')
    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(/would not fit; not retried: upstream 429$/)
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 1 })
  })

  it('a processor that moves its job to delayed past the deadline (job.moveToDelayed) is failed at once with deadline_exceeded, not parked to fail when the delay ends', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const processor = withDeadline(async (job: Job, token?: string) => {
      await job.moveToDelayed(Date.now() + 60_000, token)
      throw new DelayedError()
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(5_000) })
    // Either BullMQ fails it now, or it sits a minute in delayed.
    const first = await Promise.race([
      once(events, 'failed').then(() => 'failed'),
      once(events, 'delayed').then(() => 'delayed'),
    ])
    expect(first).toBe('failed')
    const stored = await queue.getJob(job.id!)
    const reason = stored?.failedReason ?? ''
    expect(reason).toMatch(
      /^deadline_exceeded: job \d+ .* failed with \d+ ms left \(added with \d+ ms left\) and its next attempt, after \d+ ms, would not fit; not retried: moveToDelayed\(\d+\) would resume the job \d+ ms after its deadline; it was not moved$/,
    )
    // The delay asked for, measured as BullMQ measures it (from now, on the wall clock).
    const delayMs = Number(/after (\d+) ms/.exec(reason)?.[1])
    expect(delayMs).toBeGreaterThan(50_000)
    expect(delayMs).toBeLessThanOrEqual(60_000)
    expect(ends.map((e) => e.outcome)).toEqual(['no_time_to_retry'])
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 1 })
  })

  it("a moveToDelayed refused in the job's last 100 ms is still a retry that does not fit (no_time_to_retry), not the job stopped by its deadline", async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const clock = new ManualClock()
    const processor = withDeadline(
      async (job: Job, token?: string) => {
        clock.advance(currentDeadline()!.remaining() - 90)
        await job.moveToDelayed(Date.now() + 60_000, token)
      },
      { clock },
    )
    redis.worker(name, processor)
    const job = await addWithDeadline(
      queue,
      'poll',
      {},
      { deadline: Deadline.after(20_000), attempts: 3 },
    )
    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.attemptsMade).toBe(1)
    // Before: "was stopped by its deadline", the refusal nested in it, counted stopped.
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ of \S+ failed with \d+ ms left \(added with \d+ ms left\) and its next attempt, after \d+ ms, would not fit; not retried: moveToDelayed\(\d+\) would resume the job \d+ ms after its deadline; it was not moved$/,
    )
    expect(ends.map((e) => e.outcome)).toEqual(['no_time_to_retry'])
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 1 })
  })

  it('a moveToDelayed that would resume the job before its deadline but with less than minBudgetMs left is refused in those words, not as one after the deadline', async () => {
    const { queue, events, name } = await redis.queue()
    const processor = withDeadline(
      async (job: Job, token?: string) => {
        await job.moveToDelayed(Date.now() + 15_000, token)
        throw new DelayedError()
      },
      { minBudgetMs: 10_000 },
    )
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(20_000) })
    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(
      /not retried: moveToDelayed\(\d+\) would resume the job with \d+ ms left, less than minBudgetMs \(10000\); it was not moved$/,
    )
    expect(processor.counts.retriesDropped).toBe(1)
  })

  it("a moveToDelayed that leaves time is BullMQ's as before: the job is delayed, then runs again", async () => {
    const { queue, events, name } = await redis.queue()
    let calls = 0
    const processor = withDeadline(async (job: Job, token?: string) => {
      if (++calls > 1) return 'again'
      await job.moveToDelayed(Date.now() + 50, token)
      throw new DelayedError()
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(20_000) })
    const result = await finished(job, events, queue)
    expect(result).toMatchObject({ ok: true, value: 'again', state: 'completed' })
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
  })

  it("a moveToDelayed given a timestamp no arithmetic takes (a BigInt, a Symbol, a valueOf that throws) rejects as BullMQ's does: it never throws synchronously", async () => {
    const { queue, events, name } = await redis.queue()
    const bad: [string, unknown][] = [
      ['bigint', 10n],
      ['symbol', Symbol('later')],
      [
        'valueOf',
        {
          valueOf: () => {
            throw new Error('no time for you')
          },
        },
      ],
    ]
    const processor = withDeadline(async (job: Job, token?: string) => {
      const seen: string[] = []
      for (const [label, timestamp] of bad) {
        let pending: Promise<void>
        try {
          pending = job.moveToDelayed(timestamp as number, token)
        } catch (error) {
          seen.push(`${label}: threw ${(error as Error).message}`)
          continue
        }
        await pending.then(
          () => seen.push(`${label}: moved`),
          (error: Error) => seen.push(`${label}: rejected ${error.constructor.name}`),
        )
      }
      return seen
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(20_000) })
    const result = await finished(job, events, queue)
    expect(result).toMatchObject({ ok: true, state: 'completed' })
    expect(result.value).toEqual([
      'bigint: rejected TypeError',
      'symbol: rejected TypeError',
      'valueOf: rejected Error',
    ])
  })

  it("a processor that catches the refused moveToDelayed and throws DelayedError anyway (BullMQ's step-job pattern) fails now with the refusal, not left active for the stall check", async () => {
    const { queue, events, name } = await redis.queue()
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(function onEnd(message) {
      bullmqChannels.end.unsubscribe(onEnd)
      ended.resolve(message)
    })
    const processor = withDeadline(async (job: Job, token?: string) => {
      try {
        await job.moveToDelayed(Date.now() + 60_000, token)
      } catch {
        // A step job's usual shape: whatever moveToDelayed did, the step ends here.
      }
      throw new DelayedError()
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'step', {}, { deadline: Deadline.after(5_000) })
    // Before: `deferred`, and the job sat in active, unlocked, until BullMQ's stall check.
    expect((await ended.promise).outcome).toBe('no_time_to_retry')
    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.attemptsMade).toBe(1)
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ .* would not fit; not retried: moveToDelayed\(\d+\) would resume the job \d+ ms after its deadline; it was not moved$/,
    )
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 1 })
  })

  it.each([
    ['awaited', true],
    ['not awaited (forgotten from its start, not its end)', false],
  ])(
    "a refused moveToDelayed followed by one that leaves time, %s, is forgotten: the job moved, and its DelayedError is BullMQ's as before",
    async (_, awaited) => {
      const { queue, events, name } = await redis.queue()
      const ends = collect(bullmqChannels.end)
      let calls = 0
      const processor = withDeadline(async (job: Job, token?: string) => {
        if (++calls > 1) return 'again'
        await job.moveToDelayed(Date.now() + 60_000, token).catch(() => {})
        const moving = job.moveToDelayed(Date.now() + 50, token)
        if (awaited) await moving
        throw new DelayedError()
      })
      redis.worker(name, processor)
      const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(20_000) })
      const result = await finished(job, events, queue)
      expect(result).toMatchObject({ ok: true, value: 'again', state: 'completed' })
      expect(processor.counts.retriesDropped).toBe(0)
      expect(ends.map((e) => e.outcome)).toEqual(['deferred', 'completed'])
    },
  )

  it.each([
    ['WaitingChildrenError', () => new WaitingChildrenError()],
    ['WaitingError', () => new WaitingError()],
  ])(
    'a processor that catches the refused moveToDelayed and throws %s (it never moved its job) fails now with the refusal, not left active for the stall check',
    async (_, announce) => {
      const { queue, events, name } = await redis.queue()
      const ended = nextEnd()
      let movedToWaitingChildren: unknown
      const processor = withDeadline(async (job: Job, token?: string) => {
        await job.moveToDelayed(Date.now() + 60_000, token).catch(() => {})
        // No child pending: BullMQ moves nothing and says so.
        movedToWaitingChildren = await job.moveToWaitingChildren(token!)
        throw announce()
      })
      redis.worker(name, processor)
      const job = await addWithDeadline(queue, 'step', {}, { deadline: Deadline.after(5_000) })
      // Before: `deferred`, the job left in active, unlocked, until BullMQ's stall check.
      expect((await ended).outcome).toBe('no_time_to_retry')
      const result = await finished(job, events, queue)
      expect(movedToWaitingChildren).toBe(false)
      expect(result.state).toBe('failed')
      expect(result.failedReason).toMatch(
        /^deadline_exceeded: job \d+ .* would not fit; not retried: moveToDelayed\(\d+\) would resume the job \d+ ms after its deadline; it was not moved$/,
      )
      expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 1 })
    },
  )

  it.each([
    ['moveToWait, then WaitingError', 'wait'],
    ['moveToWaitingChildren with a child pending, then WaitingChildrenError', 'children'],
  ])(
    "a refused moveToDelayed followed by a move that moves the job (%s) is forgotten: the move is BullMQ's as before",
    async (_, how) => {
      const { queue, events, name } = await redis.queue()
      const ends = collect(bullmqChannels.end)
      let calls = 0
      const processor = withDeadline(async (job: Job, token?: string) => {
        if (job.name === 'child') return 'child done'
        if (++calls > 1) return 'again'
        await job.moveToDelayed(Date.now() + 60_000, token).catch(() => {})
        if (how === 'wait') {
          await job.moveToWait(token)
          throw new WaitingError()
        }
        await queue.add('child', {}, { parent: { id: job.id!, queue: job.queueQualifiedName } })
        expect(await job.moveToWaitingChildren(token!)).toBe(true)
        throw new WaitingChildrenError()
      })
      redis.worker(name, processor)
      const job = await addWithDeadline(queue, 'step', {}, { deadline: Deadline.after(20_000) })
      const result = await finished(job, events, queue)
      expect(result).toMatchObject({ ok: true, value: 'again', state: 'completed' })
      expect(processor.counts.retriesDropped).toBe(0)
      expect(ends.map((e) => e.outcome)).toEqual(['deferred', 'completed'])
    },
  )

  it("a manual rate limit (queue.rateLimit, then Worker.RateLimitError) is BullMQ's even past the deadline: the job goes back to wait, the worker takes nothing before the limit ends, and the job is then failed unrun as expired", async () => {
    const { queue, events, name } = await redis.queue()
    // The deadline leaves a loaded machine's worker a whole second to take the job
    // first (taken later, it is failed unrun at once and the test fails, never passes).
    const limitMs = 1_300
    const ended = nextEnd()
    let calls = 0
    let limitedAt = 0
    const processor = withDeadline(async () => {
      calls++
      // Taken before the limit is set: the limit ends no earlier than this plus limitMs.
      limitedAt = Date.now()
      await queue.rateLimit(limitMs)
      throw Worker.RateLimitError()
    })
    // A `limiter`, as BullMQ's docs ask of a worker whose processor sets a manual rate limit.
    const worker = redis.worker(name, processor, { limiter: { max: 100, duration: 1_000 } })
    const takenAt: number[] = []
    worker.on('active', () => takenAt.push(Date.now()))
    const job = await addWithDeadline(
      queue,
      'limited',
      {},
      { deadline: Deadline.after(1_000, { clock: new ManualClock() }) },
    )
    const end = await ended
    // Before: `no_time_to_retry`, the job failed at once, and BullMQ never
    // held the worker for the limit, so it took its next job without waiting.
    expect(end.outcome).toBe('deferred')
    expect(end.enforcedOutcome).toBeUndefined()
    const result = await finished(job, events, queue)
    expect(calls).toBe(1)
    expect(takenAt).toHaveLength(2)
    expect(takenAt[1]! - limitedAt).toBeGreaterThanOrEqual(limitMs)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ of q\d+-\d+ reached a worker \d+ ms after its deadline \(added with 1000 ms left\); not run$/,
    )
    expect(processor.counts).toEqual({ expired: 1, stopped: 0, retriesDropped: 0 })
  })

  it('an attempt stopped by its deadline that then throws DelayedError after a refused moveToDelayed is reported stopped by its deadline (deadline_exceeded, counts.stopped)', async () => {
    const { queue, events, name } = await redis.queue()
    const clock = new ManualClock()
    const running = signal<Deadline>()
    const ended = nextEnd()
    let calls = 0
    const processor = withDeadline(
      async (job: Job, token?: string, jobSignal?: AbortSignal) => {
        if (++calls > 1) return 'again'
        running.resolve(currentDeadline()!)
        await once(jobSignal!, 'abort')
        await job.moveToDelayed(Date.now() + 60_000, token).catch(() => {})
        throw new DelayedError()
      },
      { clock },
    )
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'stopped', {}, { deadline: Deadline.after(20_000) })
    clock.advance((await running.promise).remaining() + 1)
    // Before: `no_time_to_retry` (the refusal).
    expect((await ended).outcome).toBe('deadline_exceeded')
    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(/was stopped by its deadline/)
    expect(processor.counts).toEqual({ expired: 0, stopped: 1, retriesDropped: 0 })
  })

  it.each([
    ['caught, then WaitingChildrenError', true, 'deferred'],
    ['thrown on', false, 'failed'],
  ])(
    'a refused moveToDelayed after a move that took the job out of active (to waiting-children), %s, does not fail the attempt: the job is where that move put it',
    async (_, caught, outcome) => {
      const { queue, events, name } = await redis.queue()
      const ends = collect(bullmqChannels.end)
      let calls = 0
      let refused: unknown
      const processor = withDeadline(async (job: Job, token?: string) => {
        if (job.name === 'child') return 'child done'
        if (++calls > 1) return 'again'
        await queue.add('child', {}, { parent: { id: job.id!, queue: job.queueQualifiedName } })
        expect(await job.moveToWaitingChildren(token!)).toBe(true)
        const moving = job.moveToDelayed(Date.now() + 60_000, token)
        if (!caught) await moving
        await moving.catch((error) => {
          refused = error
        })
        throw new WaitingChildrenError()
      })
      redis.worker(name, processor)
      const job = await addWithDeadline(queue, 'step', {}, { deadline: Deadline.after(20_000) })
      const result = await finished(job, events, queue)
      // Before: no_time_to_retry, retriesDropped 1 — yet the job was in waiting-children.
      expect(ends.filter((e) => e.jobId === job.id).map((e) => e.outcome)).toEqual([
        outcome,
        'completed',
      ])
      expect(result).toMatchObject({ ok: true, value: 'again', state: 'completed' })
      // The refused move itself still rejects to its caller.
      if (caught) expect(isJobDeadlineExceeded(refused)).toBe(true)
      expect(processor.counts.retriesDropped).toBe(0)
    },
  )

  it('a moveToDelayed reads its timestamp once: a Date-like value whose valueOf changes between reads is moved to the time checked', async () => {
    const { queue, events, name } = await redis.queue()
    const ended = nextEnd()
    let reads = 0
    let calls = 0
    const processor = withDeadline(async (job: Job, token?: string) => {
      if (++calls > 1) return 'again'
      const now = Date.now()
      // Checked at 50 ms from now; read again, a minute away, past the deadline.
      const at = { valueOf: () => (++reads === 1 ? now + 50 : now + 60_000) }
      await job.moveToDelayed(at as unknown as number, token)
      throw new DelayedError()
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(5_000) })
    await ended
    // Before: read twice, and the job parked for a minute where a 50 ms delay was allowed.
    expect(reads).toBe(1)
    const result = await finished(job, events, queue)
    expect(result).toMatchObject({ ok: true, value: 'again', state: 'completed' })
  })

  it('a refused moveToDelayed the processor does not await is no unhandled rejection (it would end the worker process): the attempt fails with it', async () => {
    const { queue, events, name } = await redis.queue()
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    onTestFinished(() => {
      process.off('unhandledRejection', onUnhandled)
    })
    const processor = withDeadline(async (job: Job, token?: string) => {
      void job.moveToDelayed(Date.now() + 60_000, token)
      throw new DelayedError()
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(5_000) })
    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(/it was not moved$/)
    // An unhandled rejection is reported after a macrotask at most.
    await new Promise((resolve) => setImmediate(resolve))
    expect(unhandled.map(String)).toEqual([])
  })

  it('observe mode: a moveToDelayed past the deadline moves the job as asked, and the end message says enforcement would have failed it (no_time_to_retry)', async () => {
    const { queue, name } = await redis.queue()
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(function onEnd(message) {
      bullmqChannels.end.unsubscribe(onEnd)
      ended.resolve(message)
    })
    const processor = withDeadline(async (job: Job, token?: string) => {
      await job.moveToDelayed(Date.now() + 60_000, token)
      throw new DelayedError()
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(
      queue,
      'poll',
      {},
      { deadline: Deadline.after(5_000, { observe: true }) },
    )
    expect(await ended.promise).toMatchObject({
      jobId: job.id,
      outcome: 'deferred',
      enforcedOutcome: 'no_time_to_retry',
    })
    expect(await (await queue.getJob(job.id!))?.getState()).toBe('delayed')
    expect(processor.counts.retriesDropped).toBe(0)
  })

  it('observe mode: a retry enforcement would drop is kept, and the end message says what enforcement would have done', async () => {
    const { queue, name } = await redis.queue()
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(function onEnd(message) {
      bullmqChannels.end.unsubscribe(onEnd)
      ended.resolve(message)
    })
    const processor = withDeadline(async () => {
      throw new Error('upstream 503')
    })
    redis.worker(name, processor)
    const job = await addWithDeadline(
      queue,
      'flaky',
      {},
      {
        deadline: Deadline.after(5_000, { observe: true }),
        attempts: 3,
        backoff: { type: 'fixed', delay: 60_000 },
      },
    )
    const end = await ended.promise
    expect(end).toMatchObject({
      jobId: job.id,
      outcome: 'retry',
      enforcedOutcome: 'no_time_to_retry',
    })
    await expect.poll(async () => (await queue.getJob(job.id!))?.getState()).toBe('delayed')
    expect(processor.counts.retriesDropped).toBe(0)
  })

  // An observe-only deadline that has passed aborted nothing, so it has no
  // reason: these failures are reported as the deadline's, not the job's own.
  it('observe mode: an attempt that fails after its deadline fails as it would without Hourglass, and the end message says enforcement would have stopped it (deadline_exceeded)', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const { processor, failLate } = lateFailure()
    redis.worker(name, processor)
    const job = await addWithDeadline(
      queue,
      'dark-late',
      {},
      { deadline: Deadline.after(10_000, { observe: true, clock: new ManualClock() }) },
    )
    expect((await failLate()).expired).toBe(true)

    const result = await finished(job, events, queue)
    expect(result).toMatchObject({ state: 'failed', failedReason: 'upstream 503', attemptsMade: 1 })
    expect(ends).toEqual([
      expect.objectContaining({
        jobId: job.id,
        outcome: 'failed',
        enforcedOutcome: 'deadline_exceeded',
      }),
    ])
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
  })

  it('observe mode: an attempt that fails after its deadline with attempts left is retried, reported as one enforcement would have stopped (deadline_exceeded), not as a dropped retry', async () => {
    const { queue, name } = await redis.queue()
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(function onEnd(message) {
      bullmqChannels.end.unsubscribe(onEnd)
      ended.resolve(message)
    })
    const { processor, failLate } = lateFailure()
    redis.worker(name, processor)
    const job = await addWithDeadline(
      queue,
      'dark-late-retry',
      {},
      {
        deadline: Deadline.after(10_000, { observe: true, clock: new ManualClock() }),
        attempts: 3,
        // Long enough that the retry is still waiting when the test ends.
        backoff: { type: 'fixed', delay: 60_000 },
      },
    )
    await failLate()

    expect(await ended.promise).toMatchObject({
      jobId: job.id,
      outcome: 'retry',
      enforcedOutcome: 'deadline_exceeded',
    })
    await expect.poll(async () => (await queue.getJob(job.id!))?.getState()).toBe('delayed')
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
  })

  it('a stalled job that comes back after its deadline does not run', async () => {
    const { queue, events, name } = await redis.queue()
    // Worker A takes the job and then stops renewing its lock, as a crashed or
    // blocked worker does; its processor never returns while the test runs.
    // A plain processor: a wrapped one, handed the job after its 500 ms on a
    // loaded box, refused it itself, and the test waited for A until it timed
    // out. What is tested is B, which takes the job back.
    const takenByA = signal()
    const release = signal()
    const a = redis.worker(
      name,
      async () => {
        takenByA.resolve()
        await release.promise
      },
      { skipLockRenewal: true, lockDuration: 1_000, skipStalledCheck: true },
    )
    // On a manual clock the add cannot outlast the deadline on a loaded box;
    // the job's 500 ms run out on the Redis clock, before A's 1 s lock, taken
    // after the job was added, does.
    const job = await addWithDeadline(
      queue,
      'stalls',
      {},
      { deadline: Deadline.after(500, { clock: new ManualClock() }) },
    )
    await takenByA.promise
    await a.pause(true)

    // Worker B finds the lock gone, moves the job back to wait, and takes it —
    // after its deadline.
    let callsInB = 0
    const b = withDeadline(async () => {
      callsInB++
    })
    const stalled = signal()
    redis.worker(name, b, { stalledInterval: 100 }).on('stalled', () => stalled.resolve())
    const result = await finished(job, events, queue)
    release.resolve()

    await stalled.promise
    expect(callsInB).toBe(0)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ .* reached a worker \(back from a stalled worker\) \d+ ms after its deadline \(added with \d+ ms left\); not run$/,
    )
    expect(b.counts.expired).toBe(1)
  })

  it('a stored expiry beyond the budget the job was added with (a producer bug, a Redis clock stepped back) is cut to that budget; malformed values never crash the worker', async () => {
    const { queue, events, name } = await redis.queue()
    const now = await redisNowMs(redis.client())
    const seen: Record<string, number | undefined> = {}
    // The worker's timers on a manual clock: what a job is given is read
    // before any local time can pass.
    const processor = withDeadline(
      async (job: Job) => {
        seen[job.name] = currentDeadline()?.remaining()
        return 'ran'
      },
      { clock: new ManualClock() },
    )
    redis.worker(name, processor)
    const stored: Record<string, unknown> = {
      // µs instead of ms: ~57,000 years away, claiming 500 ms.
      micros: { expiresAtMs: (now + 500) * 1000, budgetMs: 500 },
      far: { expiresAtMs: Number.MAX_VALUE, budgetMs: 500 },
      // No budget recorded: the expiry is used, within the worker's maxMs
      // (an hour by default; see foreignDeadlines.test.ts).
      noBudget: { expiresAtMs: now + 60_000 },
      text: { expiresAtMs: 'soon', budgetMs: 500 },
    }
    for (const [jobName, hourglass] of Object.entries(stored)) {
      const job = await queue.add(jobName, {}, { hourglass } as JobsOptions)
      expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ran' })
    }
    expect(seen.micros).toBe(500)
    expect(seen.far).toBe(500)
    // What is left of its 60 s on the Redis clock (seconds of margin for a loaded box).
    expect(seen.noBudget).toBeGreaterThan(30_000)
    expect(seen.noBudget).toBeLessThanOrEqual(60_000)
    expect(seen.text).toBeUndefined() // malformed: no deadline, as documented
  })

  it("jobs without a deadline run as usual: no current deadline, BullMQ's own signal, nothing counted", async () => {
    const { queue, events, name } = await redis.queue()
    const starts = collect(bullmqChannels.start)
    let seen: { deadline: Deadline | undefined; signal: AbortSignal | undefined } | undefined
    const processor = withDeadline(async (_job: Job, _token, jobSignal) => {
      seen = { deadline: currentDeadline(), signal: jobSignal }
      return 42
    })
    redis.worker(name, processor)
    // A plain add, and addWithDeadline outside any deadline: both carry none.
    const plain = await queue.add('plain', {})
    const outside = await addWithDeadline(queue, 'outside', {})
    expect(outside.opts).not.toHaveProperty('hourglass')
    for (const job of [plain, outside]) {
      expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 42 })
      expect(seen!.deadline).toBeUndefined()
      expect(seen!.signal).toBeInstanceOf(AbortSignal)
    }
    expect(starts).toEqual([])
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
  })

  it('a processor that ignores its signal and returns after the deadline keeps its result: completed, reported completed_late', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const clock = new ManualClock()
    const started = signal()
    const proceed = signal()
    redis.worker(
      name,
      withDeadline(
        async () => {
          started.resolve()
          await proceed.promise // deaf to the signal: the work happened, so the result stands
          return 'done anyway'
        },
        { clock },
      ),
    )
    const job = await addWithDeadline(queue, 'deaf', {}, { deadline: Deadline.after(10_000) })
    await started.promise
    clock.advance(10_000)
    proceed.resolve()
    expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'done anyway' })
    expect(ends.map((e) => e.outcome)).toEqual(['completed_late'])
  })

  it('an observe-only deadline (dark mode) is reported, never enforced: an expired job still runs', async () => {
    const { queue, events, name } = await redis.queue()
    const expired = collect(bullmqChannels.expire)
    const deadline = Deadline.after(50, { observe: true, clock: new ManualClock() })
    const job = await addWithDeadline(queue, 'dark', {}, { deadline })
    await redisClockPasses(redis.client(), storedExpiry(job))
    const processor = withDeadline(async () => 'ran')
    redis.worker(name, processor)
    expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ran' })
    expect(expired).toEqual([expect.objectContaining({ jobId: job.id, observe: true })])
    expect(processor.counts.expired).toBe(0)
  })

  it('start and end messages carry the job, its budget, what is left and the outcome', async () => {
    const { queue, events, name } = await redis.queue()
    const adds = collect(bullmqChannels.add)
    const starts = collect(bullmqChannels.start)
    const ends = collect(bullmqChannels.end)
    redis.worker(
      name,
      withDeadline(async () => 'ok'),
    )
    const deadline = Deadline.after(8_000, { clock: new ManualClock() })
    const job = await addWithDeadline(queue, 'traced', {}, { deadline })
    await finished(job, events, queue)

    const common = { jobId: job.id, queue: name, name: 'traced', budgetMs: 8_000 }
    expect(adds).toEqual([
      expect.objectContaining({ ...common, remainingMs: 8_000, observe: false }),
    ])
    expect(adds[0]!.clockErrorMs).toBeGreaterThanOrEqual(0)
    expect(starts).toEqual([expect.objectContaining({ ...common, attempt: 1 })])
    expect(ends).toEqual([expect.objectContaining({ ...common, attempt: 1, outcome: 'completed' })])
    expect(starts[0]!.deadline).toBe(ends[0]!.deadline)
    expect(starts[0]!.remainingMs).toBeLessThanOrEqual(adds[0]!.budgetMs!)
    expect(ends[0]!.elapsedMs).toBeGreaterThanOrEqual(0)
    expect(ends[0]).not.toHaveProperty('error')
  })

  it('rejects a negative minBudgetMs when the processor is wrapped', () => {
    expect(() => withDeadline(async () => {}, { minBudgetMs: -1 })).toThrow(RangeError)
  })

  it('the wrapped processor declares three parameters, so BullMQ hands it its signal', () => {
    expect(withDeadline(async () => {}).length).toBe(3)
  })

  it('as with BullMQ, a processor that declares no third parameter gets no signal; the deadline still reaches it as currentDeadline()', async () => {
    const { queue, events, name } = await redis.queue()
    let seen: { args: number; signal: unknown; deadline: Deadline | undefined } | undefined
    redis.worker(
      name,
      withDeadline(async (...args: unknown[]) => {
        seen = { args: args.length, signal: args[2], deadline: currentDeadline() }
      }),
    )
    const job = await addWithDeadline(queue, 'no-signal', {}, { deadline: Deadline.after(5_000) })
    await finished(job, events, queue)
    expect(seen!.signal).toBeUndefined()
    expect(seen!.deadline).toBeInstanceOf(Deadline)
  })
})

// The error itself, without Redis.
describe('JobDeadlineExceededError', () => {
  it('is a deadline error by code, and one BullMQ will not retry by name', () => {
    const error = new JobDeadlineExceededError({
      stage: 'queued',
      jobId: '7',
      queue: 'mail',
      budgetMs: 2000,
      elapsedMs: 2500,
    })
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(isJobDeadlineExceeded(error)).toBe(true)
    expect(isJobDeadlineExceeded(new DeadlineExceededError({ budgetMs: 1, elapsedMs: 1 }))).toBe(
      false,
    )
    expect(error.code).toBe('DEADLINE_EXCEEDED')
    expect(error.name).toBe('UnrecoverableError')
    expect(error.message).toBe(
      'deadline_exceeded: job 7 of mail reached a worker 500 ms after its deadline (added with 2000 ms left); not run',
    )
  })
})

/**
 * A processor that fails with 'upstream 503' once told to, and `failLate()`:
 * it waits for the attempt to start, moves the worker's clock past the
 * attempt's deadline, then lets it fail; resolves with that deadline.
 */
function lateFailure() {
  const clock = new ManualClock()
  const started = signal<Deadline>()
  const proceed = signal()
  const processor = withDeadline(
    async () => {
      started.resolve(currentDeadline()!)
      await proceed.promise
      throw new Error('upstream 503')
    },
    { clock },
  )
  const failLate = async (): Promise<Deadline> => {
    const deadline = await started.promise
    clock.advance(deadline.remaining() + 1)
    proceed.resolve()
    return deadline
  }
  return { processor, failLate }
}
