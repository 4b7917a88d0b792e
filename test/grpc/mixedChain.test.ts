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
    // 10 s on the wall clock: three hops (the first gRPC call connecting) must
    // be answered within it, with time to spare, on a loaded machine too.
    const res = await ask('fast', 10_000)
    expect(res.statusCode).toBe(200)
    const body = (await res.body.json()) as Record<string, number>
    const edge = chain.edgeStarts.at(-1)!
    const call = chain.grpcCalls.at(-1)!
    const grpc = chain.grpcStarts.at(-1)!
    const inner = chain.innerStarts[before]!
    expect(edge.budgetMs).toBe(10_000)
    // The edge keeps 10 ms to answer: the gRPC call gets at most 9990.
    expect(call.budgetMs).toBeLessThanOrEqual(9990)
    expect(call.headerMs).toBeLessThanOrEqual(9990)
    // grpc-timeout is rounded up to whole ms by grpc-js: never more than 1 ms over.
    expect(grpc.budgetMs).toBeLessThanOrEqual(Math.ceil(call.budgetMs))
    // The gRPC hop keeps 50 ms: what it propagates over HTTP is less again.
    expect(inner.budgetMs).toBeLessThanOrEqual(grpc.budgetMs - 50)
    expect(edge.budgetMs).toBeGreaterThan(grpc.budgetMs)
    expect(grpc.budgetMs).toBeGreaterThan(inner.budgetMs)
    expect(body).toEqual({
      innerBudgetMs: Math.round(inner.deadline.budgetMs),
      grpcBudgetMs: grpc.budgetMs,
      edgeBudgetMs: 9990,
    })
  })

  it('slow inner work: it is stopped at its deadline, DEADLINE_EXCEEDED comes back over gRPC, and the caller gets a 504', async () => {
    const before = chain.innerWork.length
    const innerAnswersBefore = chain.innerAnswers.length
    const grpcAnswersBefore = chain.grpcAnswers.length
    // Long enough for the call to reach the inner handler through both hops
    // on a loaded machine (each keeps its reserve), short enough to run out.
    const res = await ask('hang', 1000)
    expect(res.statusCode).toBe(504)
    expect(res.headers['x-deadline-expired']).toBe('1')
    expect(((await res.body.json()) as { error: string }).error).toBe('deadline_exceeded')
    // Each hop records its answer as it comes: the edge's 504 (on its own
    // timer) can reach us before the hops behind it have recorded theirs on a
    // loaded box, so this request's records are waited for, not taken as the last.
    await expect
      .poll(() => chain.innerAnswers.length, { timeout: 10_000 })
      .toBeGreaterThan(innerAnswersBefore)
    await expect
      .poll(() => chain.grpcAnswers.length, { timeout: 10_000 })
      .toBeGreaterThan(grpcAnswersBefore)
    const work = chain.innerWork[before]!
    const innerAnswer = chain.innerAnswers[innerAnswersBefore]!
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
    expect(chain.grpcAnswers[grpcAnswersBefore]?.code).toBe(status.DEADLINE_EXCEEDED)
  })

  // "A gRPC handler that ignores the inner 504 is answered DEADLINE_EXCEEDED
  // by its own deadline" is in mixedChain.timing.test.ts: its own deadline
  // ends only 50 ms (its reserve) before its caller's, and a loaded box's late
  // timer can let the caller's cancel reach it first.

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
