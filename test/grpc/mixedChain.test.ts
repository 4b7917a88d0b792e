import { status } from '@grpc/grpc-js'
import { DEADLINE_HEADER, isClientClosed, isDeadlineExceeded } from '@hourglass/core'
import { type GrpcServerClientCancelledMessage, grpcChannels } from '@hourglass/grpc'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type MixedChain, startMixedChain } from './support/mixedChain.js'

let chain: MixedChain
beforeAll(async () => {
  chain = await startMixedChain()
})
afterAll(async () => {
  await chain.close()
})

function ask(mode: string, budgetMs: number, signal?: AbortSignal) {
  return request(`${chain.edgeUrl}/ask?mode=${mode}`, {
    headers: { [DEADLINE_HEADER]: String(budgetMs) },
    ...(signal ? { signal } : {}),
  })
}

describe('Express → gRPC → Express: one budget', () => {
  it('each hop sees less than the one before, and the answer says so', async () => {
    const before = chain.innerStarts.length
    const res = await ask('fast', 1000)
    expect(res.statusCode).toBe(200)
    const body = (await res.body.json()) as Record<string, number>
    const edge = chain.edgeStarts.at(-1)!
    const call = chain.grpcCalls.at(-1)!
    const grpc = chain.grpcStarts.at(-1)!
    const inner = chain.innerStarts[before]!
    expect(edge.budgetMs).toBe(1000)
    // The edge keeps 10 ms to answer: the gRPC call gets at most 990.
    expect(call.budgetMs).toBeLessThanOrEqual(990)
    expect(call.headerMs).toBeLessThanOrEqual(990)
    // grpc-timeout is rounded up to whole ms by grpc-js: never more than 1 ms over.
    expect(grpc.budgetMs).toBeLessThanOrEqual(Math.ceil(call.budgetMs))
    // The gRPC hop keeps 50 ms: what it propagates over HTTP is less again.
    expect(inner.budgetMs).toBeLessThanOrEqual(grpc.budgetMs - 50)
    expect(edge.budgetMs).toBeGreaterThan(grpc.budgetMs)
    expect(grpc.budgetMs).toBeGreaterThan(inner.budgetMs)
    expect(body).toEqual({
      innerBudgetMs: Math.round(inner.deadline.budgetMs),
      grpcBudgetMs: grpc.budgetMs,
      edgeBudgetMs: 990,
    })
  })

  it('slow inner work: it is stopped at its deadline, DEADLINE_EXCEEDED comes back over gRPC, and the caller gets a 504', async () => {
    const before = chain.innerWork.length
    const res = await ask('hang', 300)
    expect(res.statusCode).toBe(504)
    expect(res.headers['x-deadline-expired']).toBe('1')
    expect(((await res.body.json()) as { error: string }).error).toBe('deadline_exceeded')
    const work = chain.innerWork[before]!
    const innerAnswer = chain.innerAnswers.at(-1)!
    // The inner 504 is due 10 ms before the gRPC hop's deadline. On a loaded box
    // the inner timer can fire later than that: the gRPC hop's deadline then
    // aborts the fetch, and the inner work is stopped by its caller leaving.
    if (innerAnswer.status === undefined) {
      expect(isDeadlineExceeded(innerAnswer.error)).toBe(true)
      expect(isDeadlineExceeded(work.reason) || isClientClosed(work.reason)).toBe(true)
    } else {
      expect(innerAnswer.status).toBe(504)
      expect(isDeadlineExceeded(work.reason)).toBe(true)
    }
    expect(chain.grpcAnswers.at(-1)?.code).toBe(status.DEADLINE_EXCEEDED)
  })

  it('a gRPC handler that ignores the inner 504 is answered DEADLINE_EXCEEDED by its own deadline', async () => {
    const res = await ask('ignore', 300)
    expect(res.statusCode).toBe(504)
    await res.body.dump()
    const grpc = chain.grpcStarts.at(-1)!
    // The 504 can reach us before the gRPC hop's own timer has run (the
    // edge's answer and the hop's expiry are on different timers): wait for
    // the hop's deadline to end, then check how it ended.
    await new Promise<void>((resolve) => grpc.deadline.onDone(() => resolve()))
    expect(grpc.deadline.done).toBe(true)
    expect(isDeadlineExceeded(grpc.deadline.reason)).toBe(true)
    expect(chain.grpcAnswers.at(-1)?.code).toBe(status.DEADLINE_EXCEEDED)
  })

  it('when the client leaves, the work at every hop is cancelled: edge → gRPC call → gRPC handler → inner handler', async () => {
    const cancelled: GrpcServerClientCancelledMessage[] = []
    const onCancelled = (m: GrpcServerClientCancelledMessage) => cancelled.push(m)
    grpcChannels.serverClientCancelled.subscribe(onCancelled)
    try {
      const before = chain.innerWork.length
      const leave = new AbortController()
      const pending = ask('hang', 5000, leave.signal).catch((error: unknown) => error)
      await chain.innerStarted(before + 1)
      const work = chain.innerWork[before]!
      const stopped = new Promise<void>((resolve) =>
        work.deadline.signal.addEventListener('abort', () => resolve(), { once: true }),
      )
      leave.abort()
      await pending
      await stopped
      expect(isClientClosed(work.reason)).toBe(true)
      expect(cancelled.map((m) => m.method)).toEqual(['/hourglass.chain.Middle/Ask'])
      expect(chain.grpcAnswers.at(-1)?.code).toBe(status.CANCELLED)
    } finally {
      grpcChannels.serverClientCancelled.unsubscribe(onCancelled)
    }
  })
})
