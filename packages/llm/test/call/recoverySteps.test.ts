import { Deadline, ManualClock } from '@hourglass/core'
import { anthropicErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

const history: ChatMessage[] = [
  user('old question'),
  { role: 'assistant', content: 'old answer' },
  user('the question'),
]

/** A model whose first answer is prompt_too_long, then `ok`. */
async function tooLongOnce() {
  const fake = await fakes.start({ dialect: 'anthropic' })
  fake.enqueue(anthropicErrors.promptTooLong(), reply.text('ok'))
  const model = fakes.adapter(
    anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-opus-4-6' }),
  )
  return { fake, model }
}

describe('prompt_too_long recovery steps are bounded and checked', () => {
  it('a collapse that never settles ends at the deadline, not never', async () => {
    const { fake, model } = await tooLongOnce()
    const clock = new ManualClock(0)
    const deadline = Deadline.after(5_000, { clock })
    const error = await callModel({
      models: [model],
      deadline,
      request: { messages: history, maxTokens: 64 },
      limits: { admission: false },
      recovery: {
        collapse: () => {
          // The summariser is still working when the call's time is up.
          clock.advance(10_000)
          return new Promise<ChatMessage[]>(() => {})
        },
      },
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect(fake.requests).toHaveLength(1)
  })

  it("a compact still running when the caller's signal aborts ends with its reason", async () => {
    const { fake, model } = await tooLongOnce()
    const controller = new AbortController()
    const reason = new Error('the user left')
    const error = await callModel({
      models: [model],
      signal: controller.signal,
      request: { messages: history, maxTokens: 64 },
      limits: { admission: false },
      recovery: {
        compact: () => {
          controller.abort(reason)
          return new Promise<ChatMessage[]>(() => {})
        },
      },
    }).catch((e: unknown) => e)
    expect(error).toBe(reason)
    expect(fake.requests).toHaveLength(1)
  })

  it('a step that returns no array is refused naming the step, and nothing more is sent', async () => {
    const { fake, model } = await tooLongOnce()
    const error = await callModel({
      models: [model],
      request: { messages: history, maxTokens: 64 },
      limits: { admission: false },
      // A reducer that forgot its return.
      recovery: { collapse: (() => {}) as never },
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({
      code: 'INVALID_CHAT_REQUEST',
      field: 'recovery.collapse → messages',
    })
    expect(fake.requests).toHaveLength(1)
  })

  it('a step that returns a null message is refused naming it, and nothing more is sent', async () => {
    const { fake, model } = await tooLongOnce()
    const error = await callModel({
      models: [model],
      request: { messages: history, maxTokens: 64 },
      limits: { admission: false },
      recovery: { compact: async (messages) => [null as never, ...messages.slice(-1)] },
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({
      code: 'INVALID_CHAT_REQUEST',
      field: 'recovery.compact → messages[0]',
    })
    expect(fake.requests).toHaveLength(1)
  })

  it('a step that throws synchronously rejects the call with what it threw', async () => {
    const { model } = await tooLongOnce()
    const boom = new Error('summariser down')
    const error = await callModel({
      models: [model],
      request: { messages: history, maxTokens: 64 },
      limits: { admission: false },
      recovery: {
        collapse: () => {
          throw boom
        },
      },
    }).catch((e: unknown) => e)
    expect(error).toBe(boom)
  })

  it('a step that shrinks the history still gets answered', async () => {
    const { fake, model } = await tooLongOnce()
    const response = await callModel({
      models: [model],
      request: { messages: history, maxTokens: 64 },
      limits: { admission: false },
      recovery: { collapse: (messages) => messages.slice(-1) },
    })
    expect(response.text).toBe('ok')
    expect(fake.requests).toHaveLength(2)
  })
})

describe('prompt_too_long recovery steps that are no function', () => {
  it('are refused by name before anything is sent', async () => {
    const { fake, model } = await tooLongOnce()
    for (const step of ['collapse', 'compact']) {
      const error = await callModel({
        models: [model],
        request: { messages: history, maxTokens: 64 },
        limits: { admission: false },
        recovery: { [step]: 'summarise' } as never,
      }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toContain(`recovery.${step} must be a function`)
    }
    expect(fake.requests).toHaveLength(0)
  })
})
