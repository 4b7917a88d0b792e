import {
  currentDeadline,
  currentRequestId,
  Deadline,
  ManualClock,
  runWithDeadline,
  runWithRequestId,
} from '@hourglass/core'
import { describe, expect, it, onTestFinished } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { finished, signal } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// A worker made where it is first needed — inside a request handler — keeps
// that request's context for everything it starts. The processor itself ran
// outside it (workerCreatedInContext.test.ts), but the job's deadline was
// made, and its timer armed, in it: when the job's time ran out, its
// signal's `abort` listeners, and everything they started (a cleanup call,
// a log line), ran under the request that made the worker — its deadline
// (long over: a cleanup `createFetch` call was refused as out of time) and
// its request id (every job's abort logged as that request's). So did the
// job's `start`/`end` messages (a tracer tagging every job's span with that
// request's id) and a lost lock's stop.

interface Seen {
  deadline: Deadline | undefined
  requestId: string | undefined
}

const here = (): Seen => ({ deadline: currentDeadline(), requestId: currentRequestId() })

describe.skipIf(!available)('a worker created inside a request', () => {
  const redis = useRedisQueues()

  /** A worker made inside a request with its own id and deadline (never ending: a ManualClock). */
  const workerInRequest = (
    name: string,
    processor: Parameters<typeof redis.worker>[1],
    opts = {},
  ) => {
    const request = Deadline.after(100, { clock: new ManualClock() })
    const worker = runWithRequestId('req-1', () =>
      runWithDeadline(request, () => redis.worker(name, processor, opts)),
    )
    return { request, worker }
  }

  it("aborts a job's signal at its deadline outside that request: abort listeners and what they start see neither its deadline nor its id", async () => {
    const { queue, events, name } = await redis.queue()
    const inListener = signal<Seen>()
    const inTimer = signal<Seen>()
    // Its deadline ends when the test says, once it runs: a short real one
    // was used up before the job started on a loaded box (failed unrun). A
    // ManualClock runs each timer in the context it was armed in, as Node's
    // timers do; time is moved from a third request's context, which a timer
    // that kept none would show instead.
    const clock = new ManualClock()
    const running = signal()
    const processor = withDeadline(
      async (_job, _token, jobSignal) => {
        await new Promise<void>((resolve) => {
          running.resolve()
          jobSignal!.addEventListener('abort', () => {
            inListener.resolve(here())
            // What a cleanup handler starts from there keeps its context.
            setImmediate(() => {
              inTimer.resolve(here())
              resolve()
            })
          })
        })
        throw jobSignal!.reason
      },
      { clock },
    )
    const { request } = workerInRequest(name, processor)
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    await running.promise
    runWithRequestId('advancer', () => clock.advance(60_000))

    expect(await finished(job, events, queue)).toMatchObject({ ok: false, state: 'failed' })
    for (const seen of [await inListener.promise, await inTimer.promise]) {
      expect(seen.requestId).toBeUndefined()
      expect(seen.deadline).not.toBe(request)
    }
    expect(processor.counts.stopped).toBe(1)
  })

  it('publishes the attempt’s start and end outside that request', async () => {
    const { queue, events, name } = await redis.queue()
    const seen: Array<[string, Seen]> = []
    const onStart = () => seen.push(['start', here()])
    const onEnd = () => seen.push(['end', here()])
    bullmqChannels.start.subscribe(onStart)
    bullmqChannels.end.subscribe(onEnd)
    onTestFinished(() => {
      bullmqChannels.start.unsubscribe(onStart)
      bullmqChannels.end.unsubscribe(onEnd)
    })
    const { request } = workerInRequest(
      name,
      withDeadline<unknown, unknown>(async () => 'done'),
    )
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })

    expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'done' })
    expect(seen.map(([which]) => which)).toEqual(['start', 'end'])
    for (const [, where] of seen) {
      expect(where.requestId).toBeUndefined()
      expect(where.deadline).not.toBe(request)
    }
  })

  it('stops an attempt whose lock was lost outside that request', async () => {
    const { queue, name } = await redis.queue()
    const running = signal()
    const inListener = signal<Seen>()
    const processor = withDeadline(async (_job, _token, jobSignal) => {
      jobSignal!.addEventListener('abort', () => inListener.resolve(here()))
      running.resolve()
      await new Promise((_, reject) =>
        jobSignal!.addEventListener('abort', () => reject(jobSignal!.reason)),
      )
    })
    const { request } = workerInRequest(name, processor, { lockDuration: 400 })
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    await running.promise
    // As if the lock had expired while the worker stalled: its next renewal fails.
    await redis.client().del(`bull:${name}:${job.id}:lock`)

    const seen = await inListener.promise
    expect(seen.requestId).toBeUndefined()
    expect(seen.deadline).not.toBe(request)
  })
})

describe.skipIf(!available)("worker.cancelJob() called from another request's handler", () => {
  const redis = useRedisQueues()

  it("aborts the job's signal outside the canceller's request: its listeners see neither its deadline nor its id", async () => {
    const { queue, events, name } = await redis.queue()
    const running = signal()
    const inListener = signal<Seen>()
    const processor = withDeadline(async (_job, _token, jobSignal) => {
      running.resolve()
      await new Promise((_, reject) =>
        jobSignal?.addEventListener('abort', () => {
          inListener.resolve({ deadline: currentDeadline(), requestId: currentRequestId() })
          reject(jobSignal.reason)
        }),
      )
    })
    const worker = redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    await running.promise
    // An admin endpoint, "cancel job N", handled under its own request.
    const adminRequest = Deadline.after(50, { clock: new ManualClock() })
    runWithRequestId('req-admin', () =>
      runWithDeadline(adminRequest, () => worker.cancelJob(job.id ?? '', 'admin')),
    )
    const seen = await inListener.promise
    await finished(job, events, queue)
    // Before: 'req-admin', and the admin request's deadline.
    expect(seen.requestId).toBeUndefined()
    expect(seen.deadline).not.toBe(adminRequest)
  })
})
