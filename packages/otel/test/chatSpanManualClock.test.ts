import { Deadline, ManualClock } from '@hourglass/core'
import { callModel, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { hrTimeToMilliseconds } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A model call whose deadline runs on a ManualClock (a test's) got a chat
 * span timed on that clock: llm left `startedAt` off its message, and the
 * span began `latencyMs` of the ManualClock before its end, while every
 * other span of the trace (its parent, its own egress span) is timed by the
 * SDK on the real clock. A frozen clock made it a 0 ms span after the
 * egress span of its own send; one advanced 20 s made it start 20 s before
 * its parent. The span is on the real clock; `latencyMs` (the duration
 * metric) stays the deadline's.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let fake: FakeProvider | undefined

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
  await fake?.close()
  fake = undefined
})

const startMs = (s: ReadableSpan) => hrTimeToMilliseconds(s.startTime)
const endMs = (s: ReadableSpan) => hrTimeToMilliseconds(s.endTime)

/** One call under `clock`, inside an active `root` span; `advanceMs` moved while the fake answers. */
async function callUnder(clock: ManualClock, advanceMs: number) {
  const model = openAICompatible({ baseURL: fake!.baseURL, apiKey: 'k', model: 'gpt-x' })
  try {
    await otel.tracer.startActiveSpan('root', async (root) => {
      const call = callModel({
        models: [model],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
        deadline: Deadline.after(60_000, { clock }),
        retry: { maxAttempts: 1, budgets: false },
        limits: { admission: false },
      })
      if (advanceMs > 0) {
        await fake!.waitForRequests(1)
        clock.advance(advanceMs)
      }
      await call
      root.end()
    })
  } finally {
    await model.close?.()
  }
  const spans = await otel.spansWhere(
    (all) =>
      all.some((s) => s.name === 'root') &&
      all.some((s) => s.name === 'chat gpt-x') &&
      all.some((s) => s.name.startsWith('deadline.egress')),
  )
  const find = (name: string) => spans.find((s) => s.name.startsWith(name)) as ReadableSpan
  return { root: find('root'), chat: find('chat gpt-x'), egress: find('deadline.egress') }
}

it('a ManualClock never moved: the chat span covers the egress span of its own send', async () => {
  fake = await startFakeProvider({ dialect: 'openai' })
  fake.enqueue(reply.text('hello', { latencyMs: 50 }))
  const { chat, egress } = await callUnder(new ManualClock(), 0)
  // 10 ms of slack: the SDK dates each span on a clock anchored per trace,
  // llm's start is read on performance.now(), and on two loaded cores the
  // two drift apart by a few ms. The fault was the whole reply (50 ms) off.
  expect(startMs(chat)).toBeLessThanOrEqual(startMs(egress) + 10)
  expect(endMs(chat)).toBeGreaterThanOrEqual(endMs(egress) - 10)
})

it('a ManualClock advanced 20 s during the call: the chat span stays inside its parent', async () => {
  const clock = new ManualClock()
  fake = await startFakeProvider({ dialect: 'openai', clock })
  fake.enqueue(reply.text('hello', { latencyMs: 20_000 }))
  const { root, chat } = await callUnder(clock, 20_000)
  // 100 ms of slack, for the same drift under load: the fault was 20 s off.
  expect(startMs(chat)).toBeGreaterThanOrEqual(startMs(root) - 100)
  expect(endMs(chat)).toBeLessThanOrEqual(endMs(root) + 100)
  // The duration metric is still the deadline's latency (20 s on its clock).
  const duration = await otel.histogram('gen_ai.client.operation.duration')
  expect(duration.count).toBe(1)
  expect(duration.max).toBeGreaterThanOrEqual(20)
})
