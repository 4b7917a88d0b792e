import { type handleUnaryCall, Metadata, status } from '@grpc/grpc-js'
import { currentDeadline, ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadlineServerInterceptor, type ServerDeadlineOptions } from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

let server: RunningServer | undefined
let client: WorkClientApi | undefined

afterEach(async () => {
  client?.close()
  client = undefined
  await server?.close()
  server = undefined
})

async function serve(
  unaryHandler: handleUnaryCall<unknown, unknown>,
  options: ServerDeadlineOptions,
): Promise<WorkClientApi> {
  server = await startServer({ unary: unaryHandler }, [deadlineServerInterceptor(options)])
  client = connect(server.address)
  return client
}

function remaining(ms: string): Metadata {
  const metadata = new Metadata()
  metadata.set('x-deadline-remaining-ms', ms)
  return metadata
}

describe('the DEADLINE_EXCEEDED details tell the caller its own budget, and the reserve apart', () => {
  it('a 300 ms call cut by a server keeping 13 ms back reads "287 ms elapsed of a 287 ms budget", and names the 300 ms, the header that sent them and the 13 ms', async () => {
    const clock = new ManualClock()
    const running = deferred()
    const work = await serve(() => running.resolve(), { clock, reserveMs: 13 })
    const pending = unary(work, {}, {}, remaining('300'))
    await running.promise
    clock.advance(287)
    const result = await pending
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.details).toBe(
      'deadline exceeded: 287 ms elapsed of a 287 ms budget (the 300 ms its x-deadline-remaining-ms left when the call arrived, less 13 ms kept back to answer)',
    )
  })

  it("the details agree with the DeadlineExceededError the handler's signal aborts with", async () => {
    const clock = new ManualClock()
    const running = deferred()
    const aborted = deferred<unknown>()
    const work = await serve(
      () => {
        const signal = currentDeadline()!.signal
        signal.addEventListener('abort', () => aborted.resolve(signal.reason))
        running.resolve()
      },
      { clock, reserveMs: 10 },
    )
    const pending = unary(work, {}, {}, remaining('500'))
    await running.promise
    clock.advance(490)
    const reason = (await aborted.promise) as Error
    const result = await pending
    expect(result.error?.details.startsWith(reason.message)).toBe(true)
  })

  it('with no reserve the parenthesis names the budget and where it came from alone', async () => {
    const clock = new ManualClock()
    const running = deferred()
    const work = await serve(() => running.resolve(), { clock, reserveMs: 0 })
    const pending = unary(work, {}, {}, remaining('400'))
    await running.promise
    clock.advance(400)
    expect((await pending).error?.details).toBe(
      'deadline exceeded: 400 ms elapsed of a 400 ms budget (the 400 ms its x-deadline-remaining-ms left when the call arrived)',
    )
  })

  it('a call that arrives with less than the reserve left is told what it arrived with', async () => {
    const work = await serve(() => {}, { clock: new ManualClock(), reserveMs: 10 })
    const result = await unary(work, {}, {}, remaining('8'))
    expect(result.error?.code).toBe(status.DEADLINE_EXCEEDED)
    expect(result.error?.details).toBe(
      'deadline exceeded: 0 ms elapsed of a 0 ms budget (the 8 ms its x-deadline-remaining-ms left when the call arrived, less 10 ms kept back to answer)',
    )
  })

  it('a call that came without a deadline is told the budget was the server default, not one it sent', async () => {
    const clock = new ManualClock()
    const running = deferred()
    const work = await serve(() => running.resolve(), { clock, reserveMs: 10, defaultMs: 200 })
    const pending = unary(work, {}, {})
    await running.promise
    clock.advance(190)
    expect((await pending).error?.details).toBe(
      'deadline exceeded: 190 ms elapsed of a 190 ms budget (the 200 ms the server gives a call without a deadline, less 10 ms kept back to answer)',
    )
  })

  it('a call whose budget was cut to maxMs is told the server allows no more, not that it had that much left', async () => {
    const clock = new ManualClock()
    const running = deferred()
    const work = await serve(() => running.resolve(), { clock, reserveMs: 13, maxMs: 300 })
    const pending = unary(work, {}, {}, remaining('5000'))
    await running.promise
    clock.advance(287)
    expect((await pending).error?.details).toBe(
      'deadline exceeded: 287 ms elapsed of a 287 ms budget (the 300 ms this server allows a call (maxMs: its x-deadline-remaining-ms asked for more), less 13 ms kept back to answer)',
    )
  })

  it('a call whose deadline header the server does not trust is told so, not that it sent none', async () => {
    const clock = new ManualClock()
    const running = deferred()
    const work = await serve(() => running.resolve(), {
      clock,
      reserveMs: 10,
      defaultMs: 200,
      trust: [],
    })
    const pending = unary(work, {}, {}, remaining('5000'))
    await running.promise
    clock.advance(190)
    expect((await pending).error?.details).toBe(
      'deadline exceeded: 190 ms elapsed of a 190 ms budget (the 200 ms the server gives a call without a deadline it trusts (not trusted: x-deadline-remaining-ms), less 10 ms kept back to answer)',
    )
  })

  it('a call whose deadline header was malformed (not strict) is told which and why, not that it sent none', async () => {
    const clock = new ManualClock()
    const running = deferred()
    const work = await serve(() => running.resolve(), { clock, reserveMs: 10, defaultMs: 200 })
    const pending = unary(work, {}, {}, remaining('soon'))
    await running.promise
    clock.advance(190)
    expect((await pending).error?.details).toBe(
      'deadline exceeded: 190 ms elapsed of a 190 ms budget (the 200 ms the server gives a call without a valid deadline (x-deadline-remaining-ms: not a number), less 10 ms kept back to answer)',
    )
  })

  it("a budget from the call's own gRPC deadline is named grpc-timeout", async () => {
    const clock = new ManualClock()
    const running = deferred()
    const work = await serve(() => running.resolve(), { clock, reserveMs: 10 })
    // Far enough that grpc-js's own timer stays out of it: the ManualClock decides.
    const pending = unary(work, {}, { deadline: Date.now() + 20_000 })
    await running.promise
    clock.advance(20_000)
    expect((await pending).error?.details).toMatch(
      /^deadline exceeded: \d+ ms elapsed of a \d+ ms budget \(the \d+ ms its grpc-timeout left when the call arrived, less 10 ms kept back to answer\)$/,
    )
  })
})
