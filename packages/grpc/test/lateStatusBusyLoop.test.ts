import {
  type handleServerStreamingCall,
  type handleUnaryCall,
  Metadata,
  type ServiceError,
  status,
} from '@grpc/grpc-js'
import { currentDeadline, type Deadline, DeadlineExceededError, ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadlineServerInterceptor,
  type GrpcServerEndMessage,
  type GrpcServerExpireMessage,
  grpcChannels,
  type ServerDeadlineOptions,
} from '../src/index.js'
import {
  connect,
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
  for (const r of recordings.splice(0)) r.stop()
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
})

function watch<T>(channel: { name: string }) {
  const r = record<T>(channel)
  recordings.push(r)
  return r
}

/**
 * A handler that answers after its deadline's time, before the deadline's
 * timer had its turn: the loop was busy (its own synchronous work, or
 * another call's), and the answer was given in the turn that ended the
 * stall. The answer goes out as written, but it was reported as one in
 * time — server-end outcome `ok`, no `server-expire` — so a busy process's
 * late answers were invisible, in dark mode too. Simulated on a ManualClock
 * whose `now` jumps without running its timers, as a busy loop does
 * (@hourglass/express's `lateAnswerBusyLoop.test.ts`). The call comes with
 * no deadline: `defaultMs` 100 is its budget, 10 of it kept back.
 */
describe('a status given after the deadline, before its timer ran', () => {
  async function serve(mode: 'enforce' | 'observe', busyMs: number) {
    const clock = new ManualClock()
    const expired = watch<GrpcServerExpireMessage>(grpcChannels.serverExpire)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    let deadline: Deadline | undefined
    const handler: handleUnaryCall<unknown, unknown> = (_call, callback) => {
      deadline = currentDeadline()
      const at = clock.now()
      clock.now = () => at + busyMs // the loop was busy: no timer ran
      callback(null, { answer: 42 })
    }
    const options: ServerDeadlineOptions = { clock, mode, defaultMs: 100, reserveMs: 10 }
    server = await startServer({ unary: handler }, [deadlineServerInterceptor(options)])
    client = connect(server.address)
    const result = await unary(client, {})
    await ends.count(1)
    return { result, deadline, expired: expired.messages, ends: ends.messages }
  }

  it('reports the late answer as the call running out, action late, and stops its work (enforce)', async () => {
    const got = await serve('enforce', 150)
    // Given before the timer ran: it goes out as written.
    expect(got.result.error).toBeUndefined()
    expect(got.result.value).toEqual({ answer: 42 })
    expect(got.expired.map((m) => [m.stage, m.action, m.budgetMs, m.elapsedMs])).toEqual([
      ['handler', 'late', 100, 150],
    ])
    expect(got.ends.map((m) => [m.outcome, m.code])).toEqual([['expired', status.OK]])
    // Cancelled as its timer would have ended it: work still running for it stops.
    expect(got.deadline?.signal.aborted).toBe(true)
    expect(got.deadline?.signal.reason).toBeInstanceOf(DeadlineExceededError)
  })

  it('reports it in dark mode too, as observed, the outcome unchanged and nothing aborted', async () => {
    const got = await serve('observe', 150)
    expect(got.result.value).toEqual({ answer: 42 })
    expect(got.expired.map((m) => [m.stage, m.action])).toEqual([['handler', 'observed']])
    expect(got.ends.map((m) => [m.outcome, m.code])).toEqual([['ok', status.OK]])
    expect(got.deadline?.signal.aborted).toBe(false)
  })

  it('reports nothing for an answer in time', async () => {
    const got = await serve('enforce', 50)
    expect(got.result.value).toEqual({ answer: 42 })
    expect(got.expired).toEqual([])
    expect(got.ends.map((m) => m.outcome)).toEqual(['ok'])
    expect(got.deadline?.signal.aborted).toBe(false)
  })

  it("reports nothing for an answer inside the reserve: past the handler's deadline, before the caller's budget", async () => {
    const got = await serve('enforce', 95)
    expect(got.result.value).toEqual({ answer: 42 })
    expect(got.expired).toEqual([])
    expect(got.ends.map((m) => m.outcome)).toEqual(['ok'])
  })

  it("a handler's error status given late is reported too: it goes out as written", async () => {
    const clock = new ManualClock()
    const expired = watch<GrpcServerExpireMessage>(grpcChannels.serverExpire)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const handler: handleUnaryCall<unknown, unknown> = (_call, callback) => {
      const at = clock.now()
      clock.now = () => at + 150
      callback({ code: status.NOT_FOUND, details: 'no such thing' } as ServiceError)
    }
    server = await startServer({ unary: handler }, [
      deadlineServerInterceptor({ clock, defaultMs: 100, reserveMs: 10 }),
    ])
    client = connect(server.address)
    const result = await unary(client, {})
    await ends.count(1)
    expect(result.error?.code).toBe(status.NOT_FOUND)
    expect(expired.messages.map((m) => m.action)).toEqual(['late'])
    expect(ends.messages.map((m) => [m.outcome, m.code])).toEqual([['expired', status.NOT_FOUND]])
  })

  it("a server stream's status given late is reported, its messages all delivered", async () => {
    const clock = new ManualClock()
    const expired = watch<GrpcServerExpireMessage>(grpcChannels.serverExpire)
    const ends = watch<GrpcServerEndMessage>(grpcChannels.serverEnd)
    const handler: handleServerStreamingCall<unknown, unknown> = (call) => {
      call.write({ n: 1 })
      const at = clock.now()
      clock.now = () => at + 150
      call.write({ n: 2 })
      call.end()
    }
    server = await startServer({ serverStream: handler }, [
      deadlineServerInterceptor({ clock, reserveMs: 10 }),
    ])
    client = connect(server.address)
    const received: unknown[] = []
    const metadata = new Metadata()
    metadata.set('x-deadline-remaining-ms', '100')
    const stream = client.serverStream({}, metadata, {})
    await new Promise<void>((resolve, reject) => {
      stream.on('data', (message) => received.push(message))
      stream.on('error', reject)
      stream.on('status', () => resolve())
    })
    await ends.count(1)
    expect(received).toEqual([{ n: 1 }, { n: 2 }])
    expect(expired.messages.map((m) => [m.action, m.budgetMs])).toEqual([['late', 100]])
    expect(ends.messages.map((m) => [m.outcome, m.code])).toEqual([['expired', status.OK]])
  })
})
