import { Deadline } from '@hourglass/core'
import { callModel, openAICompatible } from '@hourglass/llm'
import { HourglassInstrumentation } from '@hourglass/otel'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * `hourglass.deadline.calls.succeeded` counts a model call once, as `llm`,
 * also when the instrumentation is enabled (or enabled again after a
 * `disable()`) while the model attempt's HTTP request is in flight: the
 * attempt's start was never heard, so nothing says it was a model send, and
 * its end was counted as an `http` call besides.
 */

let otel: ReturnType<typeof setupOtel>
let instrumentation: HourglassInstrumentation
let fake: FakeProvider

beforeEach(async () => {
  otel = setupOtel()
  instrumentation = new HourglassInstrumentation({ enabled: false })
  instrumentation.setTracerProvider(otel.tracerProvider)
  instrumentation.setMeterProvider(otel.meterProvider)
  fake = await startFakeProvider({ dialect: 'openai' })
})
afterEach(async () => {
  instrumentation.disable()
  await otel.shutdown()
  await fake.close()
})

describe('calls.succeeded: a model attempt in flight when the instrumentation is enabled', () => {
  for (const how of ['enabled', 'disabled, then enabled again'] as const) {
    it(`counts it as llm only when ${how} during its request`, async () => {
      if (how !== 'enabled') {
        instrumentation.enable()
        instrumentation.disable()
      }
      let answer = () => {}
      const answered = new Promise<void>((resolve) => {
        answer = resolve
      })
      fake.setReply(async () => {
        await answered
        return reply.text('hi')
      })
      const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' })
      const deadline = Deadline.after(10_000)
      try {
        const call = callModel({
          models: [model],
          request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
          deadline,
          limits: { admission: false },
        })
        await fake.waitForRequests(1)
        instrumentation.enable()
        answer()
        await call
        expect(
          await otel.counter('hourglass.deadline.calls.succeeded', {
            'hourglass.deadline.call.kind': 'llm',
          }),
        ).toBe(1)
        expect(
          await otel.counter('hourglass.deadline.calls.succeeded', {
            'hourglass.deadline.call.kind': 'http',
          }),
        ).toBe(0)
      } finally {
        deadline.dispose()
        await model.close()
      }
    })
  }
})
