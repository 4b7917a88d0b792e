import { callModel, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { hrTimeToMilliseconds } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * The SDK times a span by `Date.now()` at its start; `performance.now()`
 * runs on the monotonic clock, which NTP does not correct and which stops
 * during a suspend, so `performance.timeOrigin + performance.now()` drifts
 * from `Date.now()` the longer a process runs. A chat span timed that way
 * stood apart from the egress span of its own send (and from its parent)
 * by that drift. Here the wall clock is 5 s ahead of the monotonic one, as
 * in a process up for weeks after its clock was stepped.
 */

const DRIFT_MS = 5000

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let fake: FakeProvider | undefined

beforeEach(() => {
  // The wall clock, 5 s ahead, made of the monotonic one: the SDK anchors
  // each span to its own `Date.now()` at that span's start, so with the real
  // wall clock a step of the host's clock (NTP, a VM's sync) between the
  // egress span's start and the chat span's (the whole call, tens of ms on a
  // loaded box) would part the two spans by that step, beyond the 2 ms
  // slack below (CI saw the two clocks part by 11 ms within a test). Whole
  // ms, as `Date.now()` reads.
  vi.spyOn(Date, 'now').mockImplementation(
    () => Math.floor(performance.timeOrigin + performance.now()) + DRIFT_MS,
  )
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
  vi.restoreAllMocks()
})

const startMs = (s: ReadableSpan) => hrTimeToMilliseconds(s.startTime)
const endMs = (s: ReadableSpan) => hrTimeToMilliseconds(s.endTime)

it('a chat span covers the egress span of its own send, on the clock the SDK times spans by', async () => {
  fake = await startFakeProvider({ dialect: 'openai' })
  fake.enqueue(reply.text('hello'))
  const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-x' })
  try {
    await callModel({
      models: [model],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
      retry: { maxAttempts: 1, budgets: false },
      limits: { admission: false },
    })
  } finally {
    await model.close?.()
  }
  // This call's spans only, by the fake's address: in a worker shared with
  // other files, a request another file left running may end here too.
  const port = Number(new URL(fake.baseURL).port)
  const ours = (all: ReadableSpan[]) => ({
    chats: all.filter((x) => x.name === 'chat gpt-x' && x.attributes['server.port'] === port),
    egresses: all.filter(
      (x) =>
        x.name === 'deadline.egress POST' &&
        String(x.attributes['url.full']).startsWith(fake!.baseURL),
    ),
  })
  const spans = await otel.spansWhere((all) => {
    const { chats, egresses } = ours(all)
    return chats.length > 0 && egresses.length > 0
  })
  const { chats, egresses } = ours(spans)
  expect(chats).toHaveLength(1)
  expect(egresses).toHaveLength(1)
  const chat = chats[0] as ReadableSpan
  const egress = egresses[0] as ReadableSpan
  // The model attempt began before its request was sent and ended after its
  // answer was read: 2 ms of slack, as the SDK anchors each span to a
  // `Date.now()` of whole ms (it was 5 s off).
  expect(startMs(chat)).toBeLessThanOrEqual(startMs(egress) + 2)
  expect(endMs(chat)).toBeGreaterThanOrEqual(endMs(egress) - 2)
})
