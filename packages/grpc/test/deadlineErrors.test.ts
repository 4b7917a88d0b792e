import {
  Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceError,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js'
import {
  ClientClosedError,
  currentDeadline,
  DeadlineExceededError,
  ManualClock,
  wait,
} from '@hourglass/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  deadlineErrors,
  deadlineServerInterceptor,
  type GrpcServerEndMessage,
  type GrpcServerFailedAfterAnswerMessage,
  type GrpcServerLateWriteMessage,
  type GrpcServerStartMessage,
  grpcChannels,
  type ServerDeadlineOptions,
} from '../src/index.js'
import { captureWarnings } from './support/captureWarnings.js'
import {
  connect,
  deferred,
  type RunningServer,
  record,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

let server: RunningServer | undefined
let client: WorkClientApi | undefined
const recordings: Array<{ stop(): void }> = []

afterEach(async () => {
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
  for (const r of recordings.splice(0)) r.stop()
})

function watch<T>(channel: { name: string }) {
  const r = record<T>(channel)
  recordings.push(r)
  return r
}

async function serve(
  implementation: object,
  options: ServerDeadlineOptions = {},
): Promise<WorkClientApi> {
  server = await startServer(deadlineErrors(implementation), [deadlineServerInterceptor(options)])
  client = connect(server.address)
  return client
}

type Unary = ServerUnaryCall<unknown, unknown>

/** The warning a handler that failed after answering is reported by. */
const FAILED_AFTER_ANSWER = 'HOURGLASS_GRPC_FAILED_AFTER_ANSWER'
const failedAfterAnswer = (method: string, message: string) => ({
  message: `the handler of /hourglass.test.Work/${method} rejected after it had answered: ${message}`,
  type: 'HourglassWarning',
  code: FAILED_AFTER_ANSWER,
  detail: 'The answer it gave was sent; this error was not.',
})

describe('deadlineErrors: the deadline errors become gRPC statuses', () => {
  it('a DeadlineExceededError given to the callback (a slice ran out) is DEADLINE_EXCEEDED with x-deadline-expired, not UNKNOWN', async () => {
    const work = await serve({
      unary(_call: Unary, callback: sendUnaryData<unknown>) {
        const slice = currentDeadline()!.plan({ lookup: { ms: 0 } })
        slice
          .run('lookup', async (signal) => wait(1000, { signal }))
          .then(() => callback(null, {}), callback)
      },
    })
    // A budget of the caller's: under the server's own defaultMs the trailer
    // would not go (ownDeadlineNotCallers.test.ts).
    const result = await unary(work, {}, { deadline: Date.now() + 5000 })
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.details).toMatch(/^deadline exceeded in slice "lookup"/)
    expect(result.error?.metadata.get('x-deadline-expired')).toEqual(['1'])
  })

  it('a ClientClosedError is CANCELLED', async () => {
    const work = await serve({
      unary(_call: Unary, callback: sendUnaryData<unknown>) {
        callback(new ClientClosedError() as never)
      },
    })
    const result = await unary(work, {})
    expect(result.error?.code).toBe(status.CANCELLED)
  })

  it("an async handler's rejection is answered, never an unhandled rejection: deadline errors mapped, gRPC codes kept, anything else UNKNOWN without its message", async () => {
    const work = await serve({
      async unary(call: Unary) {
        const kind = (call.request as { kind: string }).kind
        await wait(1)
        if (kind === 'deadline') throw new DeadlineExceededError({ budgetMs: 50, elapsedMs: 50 })
        if (kind === 'grpc') throw Object.assign(new Error('gone'), { code: status.NOT_FOUND })
        throw new Error('secret database password in this message')
      },
    })
    const deadline = await unary(work, { kind: 'deadline' })
    const grpc = await unary(work, { kind: 'grpc' })
    const other = await unary(work, { kind: 'other' })
    expect(deadline.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(grpc.error?.code).toBe(status.NOT_FOUND)
    expect(other.error?.code).toBe(status.UNKNOWN)
    expect(other.error?.details).toBe('Unknown error')
  })

  it("a numeric code that is not a gRPC status (an HTTP client's 503, -1, 1.5, 17) is not passed off as one: UNKNOWN without the message", async () => {
    const work = await serve({
      async unary(call: Unary) {
        const code = (call.request as { code: number }).code
        await wait(1)
        throw Object.assign(new Error(`upstream said ${code}: secret body`), { code })
      },
    })
    for (const code of [503, 404, -1, 1.5, 17]) {
      const result = await unary(work, { code })
      expect({ code, status: result.error?.code, details: result.error?.details }).toEqual({
        code,
        status: status.UNKNOWN,
        details: 'Unknown error',
      })
    }
    // The gRPC range itself still passes through, its first and last included.
    expect((await unary(work, { code: status.CANCELLED })).error?.code).toBe(status.CANCELLED)
    expect((await unary(work, { code: status.UNAUTHENTICATED })).error?.code).toBe(
      status.UNAUTHENTICATED,
    )
  })

  it('an async server-streaming handler that rejects ends its stream with the mapped status', async () => {
    const work = await serve({
      async serverStream(call: ServerWritableStream<unknown, unknown>) {
        call.write({ n: 1 })
        await wait(1)
        throw new DeadlineExceededError({ budgetMs: 10, elapsedMs: 10, slice: 'render' })
      },
    })
    const stream = work.serverStream({}, new Metadata(), {})
    const received: unknown[] = []
    stream.on('data', (m) => received.push(m))
    const error = await new Promise<ServiceError>((resolve) => stream.on('error', resolve))
    expect(received).toEqual([{ n: 1 }])
    expect(error.code).toBe(status.DEADLINE_EXCEEDED)
  })

  it("a streaming handler's call.emit('error', e) is mapped as callback(e) is: a deadline error DEADLINE_EXCEEDED with x-deadline-expired, ClientClosedError CANCELLED, a status object as it came", async () => {
    const work = await serve({
      serverStream(call: ServerWritableStream<{ kind: string }, unknown>) {
        const { kind } = call.request
        if (kind === 'deadline')
          call.emit(
            'error',
            new DeadlineExceededError({ budgetMs: 10, elapsedMs: 10, slice: 'render' }),
          )
        else if (kind === 'closed') call.emit('error', new ClientClosedError())
        else call.emit('error', { code: status.NOT_FOUND, details: 'gone' })
      },
    })
    const failed = (kind: string) =>
      new Promise<ServiceError>((resolve) =>
        // A caller's budget: the trailer says it is gone (not under defaultMs).
        work
          .serverStream({ kind }, new Metadata(), { deadline: Date.now() + 5000 })
          .on('error', resolve),
      )
    const [deadline, closed, notFound] = await Promise.all([
      failed('deadline'),
      failed('closed'),
      failed('status'),
    ])
    expect(deadline.code).toBe(status.DEADLINE_EXCEEDED)
    expect(deadline.details).toMatch(/^deadline exceeded in slice "render"/)
    expect(deadline.metadata.get('x-deadline-expired')).toEqual(['1'])
    expect(closed.code).toBe(status.CANCELLED)
    expect({ code: notFound.code, details: notFound.details }).toEqual({
      code: status.NOT_FOUND,
      details: 'gone',
    })
  })

  it('after the deadline answered, the handler noticing (its abort error) is swallowed: no late write, no unhandled rejection', async () => {
    const clock = new ManualClock()
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const late = watch<GrpcServerLateWriteMessage>(grpcChannels.serverLateWrite)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const running = deferred()
    const settled = deferred<unknown>()
    const work = await serve(
      {
        async unary(_call: Unary, callback: sendUnaryData<unknown>) {
          running.resolve()
          try {
            // Outbound work bounded by the call's deadline (what createFetch does).
            await wait(60_000, { deadline: currentDeadline() })
            callback(null, {})
          } catch (error) {
            settled.resolve(error)
            throw error
          }
        },
      },
      { clock, reserveMs: 0 },
    )
    const pending = unary(work, {}, {}, metadataWith('x-deadline-remaining-ms', '100'))
    await running.promise
    await starts.count(1)
    clock.advance(100)
    const result = await pending
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    await settled.promise
    await ends.count(1)
    // One more turn: a late answer would have been reported by now.
    await new Promise((resolve) => setImmediate(resolve))
    expect(late.messages).toEqual([])
    expect(ends.messages[0]!.outcome).toBe('expired')
  })

  it('an async unary handler that rejects after it has answered: the client keeps its answer (not UNKNOWN), and the error is a process warning, not an unhandled rejection', async () => {
    const { warnings, restore } = captureWarnings(FAILED_AFTER_ANSWER)
    try {
      const work = await serve({
        async unary(_call: Unary, callback: sendUnaryData<unknown>) {
          callback(null, { saved: true })
          throw new Error('audit log unavailable') // after answering, e.g. a follow-up write
        },
      })
      const result = await unary(work, {})
      expect(result).toEqual({ value: { saved: true } })
      await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 10_000 })
      expect(warnings).toEqual([failedAfterAnswer('Unary', 'audit log unavailable')])
    } finally {
      restore()
    }
  })

  it('a handler that answers and then throws a deadline error synchronously: the client keeps its answer (not DEADLINE_EXCEEDED), the error is a process warning', async () => {
    const { warnings, restore } = captureWarnings(FAILED_AFTER_ANSWER)
    try {
      const work = await serve({
        unary(_call: Unary, callback: sendUnaryData<unknown>) {
          callback(null, { saved: true })
          // A slice that ran out after the answer was given (an audit write, say).
          throw new DeadlineExceededError({ budgetMs: 10, elapsedMs: 10, slice: 'audit' })
        },
      })
      expect(await unary(work, {})).toEqual({ value: { saved: true } })
      await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 10_000 })
      expect(warnings).toEqual([
        failedAfterAnswer(
          'Unary',
          'deadline exceeded in slice "audit": 10 ms elapsed of a 10 ms budget',
        ),
      ])
    } finally {
      restore()
    }
  })

  it('an async server-streaming handler that rejects after it ended its stream: the client keeps every message and the OK, not UNKNOWN', async () => {
    const { warnings, restore } = captureWarnings(FAILED_AFTER_ANSWER)
    try {
      const work = await serve({
        async serverStream(call: ServerWritableStream<unknown, unknown>) {
          call.write({ n: 1 })
          call.end()
          throw new Error('cleanup failed')
        },
      })
      const stream = work.serverStream({}, new Metadata(), {})
      const received: unknown[] = []
      stream.on('data', (m) => received.push(m))
      const ended = await new Promise<{ code: number }>((resolve) => {
        stream.on('error', resolve)
        stream.on('status', resolve)
      })
      expect(ended.code).toBe(status.OK)
      expect(received).toEqual([{ n: 1 }])
      await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 10_000 })
      expect(warnings).toEqual([failedAfterAnswer('ServerStream', 'cleanup failed')])
    } finally {
      restore()
    }
  })

  it('a handler that fails after it has answered is published on serverFailedAfterAnswer (method, deadline, error), once per failure, beside the warning', async () => {
    const failed = watch<GrpcServerFailedAfterAnswerMessage>(grpcChannels.serverFailedAfterAnswer)
    const starts = watch<GrpcServerStartMessage>(grpcChannels.serverStart)
    const { warnings, restore } = captureWarnings(FAILED_AFTER_ANSWER)
    try {
      const audit = new Error('audit log unavailable')
      const work = await serve({
        async unary(call: Unary, callback: sendUnaryData<unknown>) {
          callback(null, { saved: true })
          if ((call.request as { fail?: boolean }).fail) throw audit
        },
        async serverStream(call: ServerWritableStream<unknown, unknown>) {
          call.end()
          throw new Error('cleanup failed')
        },
      })
      // An answer with no failure after it publishes nothing.
      expect(await unary(work, {})).toEqual({ value: { saved: true } })
      expect(await unary(work, { fail: true })).toEqual({ value: { saved: true } })
      await failed.count(1)
      expect(failed.messages[0]).toEqual({
        deadline: starts.messages[1]!.deadline,
        method: '/hourglass.test.Work/Unary',
        error: audit,
      })
      const stream = work.serverStream({}, new Metadata(), {})
      stream.resume()
      await new Promise((resolve) => stream.on('status', resolve))
      await failed.count(2)
      expect(failed.messages[1]).toMatchObject({
        method: '/hourglass.test.Work/ServerStream',
        error: expect.objectContaining({ message: 'cleanup failed' }),
      })
      expect(failed.messages).toHaveLength(2)
      // Beside each message, its warning: one per failure.
      await vi.waitFor(() => expect(warnings).toHaveLength(2), { timeout: 10_000 })
      expect(warnings).toEqual([
        failedAfterAnswer('Unary', 'audit log unavailable'),
        failedAfterAnswer('ServerStream', 'cleanup failed'),
      ])
    } finally {
      restore()
    }
  })

  it('works on a class instance (methods on the prototype, `this` kept)', async () => {
    class Work {
      readonly greeting = 'hello'
      unary(_call: Unary, callback: sendUnaryData<unknown>) {
        callback(null, { greeting: this.greeting })
      }
    }
    const work = await serve(new Work())
    expect(await unary(work, {})).toEqual({ value: { greeting: 'hello' } })
  })
})

function metadataWith(key: string, value: string): Metadata {
  const metadata = new Metadata()
  metadata.set(key, value)
  return metadata
}
