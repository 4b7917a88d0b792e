import type { HourglassChannel } from '@hourglass/core'
import {
  anthropic,
  callModel,
  type LlmAttemptMessage,
  llmChannels,
  type ModelAdapter,
  openAICompatible,
} from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * `openai.response.service_tier` and `openai.response.system_fingerprint`
 * are OpenAI's fields under OpenAI's names: set from an answer in an
 * OpenAI-compatible dialect only. Anthropic's answer names a tier too
 * (`usage.service_tier`), which llm reports as the same `serviceTier`.
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

async function provider(dialect: 'openai' | 'anthropic'): Promise<FakeProvider> {
  const started = await startFakeProvider({ dialect })
  providers.push(started)
  return started
}

/** One call to `model`; returns its chat span's attributes. */
async function chatAttributes(model: ModelAdapter) {
  await callModel({
    models: [model],
    request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
    retry: { maxAttempts: 1, budgets: false },
    limits: { admission: false },
  })
  await model.close?.()
  const chats = otel.exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
  expect(chats).toHaveLength(1)
  return chats[0]?.attributes ?? {}
}

/** Publish as the package would, with the message type its channel declares. */
const publish = <T>(channel: HourglassChannel<T>, message: T) => channel.publish(() => message)

const answered = (extra: Partial<LlmAttemptMessage>): LlmAttemptMessage => ({
  deadline: undefined,
  attempt: 1,
  model: 'm',
  provider: 'p',
  status: 200,
  latencyMs: 5,
  decision: 'success',
  costUsd: 0,
  serviceTier: 'tier-x',
  systemFingerprint: 'fp-x',
  ...extra,
})

describe("OpenAI's response fields on a chat span", () => {
  it('are left off an Anthropic answer, whose usage names a service tier of its own', async () => {
    const fake = await provider('anthropic')
    fake.enqueue(reply.text('hello'))
    const attributes = await chatAttributes(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'claude-x' }),
    )
    expect(attributes['gen_ai.provider.name']).toBe('anthropic')
    expect(attributes).not.toHaveProperty('openai.response.service_tier')
    expect(attributes).not.toHaveProperty('openai.response.system_fingerprint')
  })

  it('are set from an OpenAI answer that sent them', async () => {
    const fake = await provider('openai')
    fake.enqueue(
      reply.error(200, {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: 'gpt-x',
        service_tier: 'flex',
        system_fingerprint: 'fp_1',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      }),
    )
    const attributes = await chatAttributes(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' }),
    )
    expect(attributes['openai.response.service_tier']).toBe('flex')
    expect(attributes['openai.response.system_fingerprint']).toBe('fp_1')
  })

  it('follow the dialect the attempt spoke, whatever the adapter is called', () => {
    for (const dialect of [
      'openai',
      'deepseek',
      'qwen',
      'ernie',
      'doubao',
      'anthropic',
      'gemini',
    ]) {
      publish(llmChannels.attempt, answered({ model: dialect, provider: 'mine', dialect }))
    }
    const tiers = Object.fromEntries(
      otel.exporter
        .getFinishedSpans()
        .map((s) => [
          s.attributes['gen_ai.request.model'],
          s.attributes['openai.response.service_tier'],
        ]),
    )
    expect(tiers).toEqual({
      openai: 'tier-x',
      deepseek: 'tier-x',
      qwen: 'tier-x',
      ernie: 'tier-x',
      doubao: 'tier-x',
      anthropic: undefined,
      gemini: undefined,
    })
  })
})
