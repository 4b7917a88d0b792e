import { Deadline, ManualClock } from '@hourglass/core'
import {
  Admission,
  type AttemptRecord,
  type CallModelOptions,
  callModel,
  openAICompatible,
} from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FakeProvider, openAIErrors, startFakeProvider } from '@hourglass/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A model attempt whose request never left (refused by @hourglass/fetch for
 * want of budget, or stopped by the caller before it was handed on) was no
 * operation on the provider: no chat span, no GenAI duration sample — and its
 * record says `sent: false`.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const providers: FakeProvider[] = []

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  await otel.shutdown()
  await Promise.all(providers.splice(0).map((p) => p.close()))
})

const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 8 }
const once: Pick<CallModelOptions, 'retry' | 'limits'> = {
  retry: { maxAttempts: 1, budgets: false },
  limits: { admission: false },
}

describe('an attempt @hourglass/fetch refuses for want of budget', () => {
  it('under fetch’s minBudgetMs left: sent false, no chat span, no operation duration', async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    providers.push(fake)
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const records: AttemptRecord[] = []
    // 3 ms left: under fetch's default minBudgetMs (5), so it fails without touching the network.
    using deadline = Deadline.after(3, { clock: new ManualClock() })
    const failed = await callModel({
      models: [model],
      request,
      deadline,
      onAttempt: (r) => records.push(r),
      ...once,
    }).catch((e: unknown) => e)
    await model.close?.()
    expect(failed).toBeInstanceOf(Error)
    expect(fake.requests).toHaveLength(0)
    expect(records.map((r) => [r.errorKind, r.sent])).toEqual([['deadline_exceeded', false]])
    const chats = otel.exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
    expect(chats.map((s) => s.name)).toEqual([])
    expect(await otel.points('gen_ai.client.operation.duration')).toEqual([])
  })
})

describe('a caller’s abort while admission waits before a retry', () => {
  it('leaves one chat span and one duration sample: the 429 that was sent, none for the retry never sent', async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    providers.push(fake)
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const records: AttemptRecord[] = []
    const controller = new AbortController()
    const failed = await callModel({
      models: [model],
      request,
      signal: controller.signal,
      retry: { maxAttempts: 2, budgets: false, maxRetryAfterMs: 60_000 },
      limits: { admission: new Admission() },
      onAttempt: (r) => {
        records.push(r)
        // Admission holds the retry for the provider's 30 s: the caller leaves meanwhile.
        if (r.decision === 'retry') setImmediate(() => controller.abort(new Error('gone')))
      },
    }).catch((e: unknown) => e)
    await model.close?.()
    expect((failed as Error).message).toBe('gone')
    expect(fake.requests).toHaveLength(1)
    const unsent = records.filter((r) => r.sent === false)
    const sent = records.filter((r) => r.sent !== false)
    expect(sent.map((r) => [r.decision, r.errorKind])).toEqual([['retry', 'rate_limited']])
    expect(unsent.every((r) => r.errorKind === 'aborted')).toBe(true)
    const chats = otel.exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
    expect(chats).toHaveLength(1)
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(durations.reduce((n, p) => n + (p.value as { count: number }).count, 0)).toBe(1)
  })
})
