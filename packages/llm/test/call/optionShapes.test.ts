import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { type CallModelOptions, callModel } from '../../src/index.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

describe('a deadline, signal or onAttempt of the wrong shape', () => {
  it.each([
    ['deadline', 5_000, 'callModel: deadline must be a Deadline'],
    ['signal', new AbortController(), 'callModel: signal must be an AbortSignal'],
    ['onAttempt', 'log', 'callModel: onAttempt must be a function'],
  ])(
    '%s is a TypeError naming it, from the promise or the stream, nothing sent',
    async (name, value, message) => {
      const fake = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o' }),
      )
      for (const stream of [false, true]) {
        const options = {
          models: [model],
          request: { messages: [user('hi')], maxTokens: 8, stream },
          [name]: value,
        } as unknown as CallModelOptions
        // callModel itself never throws: the refusal is where every failure is.
        let outcome: unknown
        try {
          const call = callModel(options) as unknown as
            | Promise<unknown>
            | { result: Promise<unknown> }
          outcome = await ('result' in call ? call.result : call).catch((e: unknown) => e)
        } catch (thrown) {
          outcome = { threwOutOfCallModel: thrown }
        }
        expect(outcome).toBeInstanceOf(TypeError)
        expect((outcome as Error).message).toContain(message)
      }
      expect(fake.requests).toHaveLength(0)
    },
  )
})

describe('an option name callModel does not read', () => {
  // Ignored, the default stayed in force while its author believed it set.
  it.each([
    [
      { deadlineMs: 500 },
      'unknown option "deadlineMs" (did you mean deadline?); callModel() takes models, request, deadline',
    ],
    [
      { retry: { maxAttempt: 1 } },
      'unknown option "maxAttempt" (did you mean maxAttempts?); callModel() retry takes',
    ],
    [
      { retry: { delay: { baseDelay: 10 } } },
      'unknown option "baseDelay" (did you mean baseDelayMs?); callModel() retry.delay takes',
    ],
    [{ limits: { budgets: undefined } }, 'unknown option "budgets" (did you mean budget?)'],
    [
      { recovery: { maxTokenCeiling: 0 } },
      'unknown option "maxTokenCeiling" (did you mean maxTokensCeiling?); callModel() recovery takes',
    ],
  ])('%o is a TypeError naming it, nothing sent', async (extra, message) => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o' }),
    )
    const options = {
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      ...extra,
    } as unknown as CallModelOptions
    const outcome = await callModel(options).catch((e: unknown) => e)
    expect(outcome).toBeInstanceOf(TypeError)
    expect((outcome as Error).message).toContain(message)
    expect(fake.requests).toHaveLength(0)
  })
})
