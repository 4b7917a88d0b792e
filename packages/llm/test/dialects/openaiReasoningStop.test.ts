import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import {
  isInvalidChatRequest,
  PROVIDER_REFUSES_VALUE,
} from '../../src/errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../../src/types.js'
import { user } from '../call/support/fakes.js'

/**
 * OpenAI's reasoning models answer `stop` with 400 "Unsupported parameter:
 * 'stop' is not supported with this model." (`param: "stop"`, code
 * `unsupported_parameter`; o1-mini and o1-preview, o3, o4-mini, GPT-5), as
 * they answer a temperature but 1. The dialect forwarded it: a gateway
 * whose fallback was `o3` sent an agent framework's request (a ReAct
 * "Observation:" stop) and handed back OpenAI's bare 400, where a
 * temperature was refused before sending, named as the fallback's refusal.
 */
const base: ChatRequest = { messages: [user('hi')], maxTokens: 16 }

function refusal(model: string, request: Partial<ChatRequest>): unknown {
  try {
    dialects.openai.buildRequest({ ...base, ...request }, model)
  } catch (error) {
    return error
  }
  return undefined
}

describe("OpenAI's reasoning models: stop sequences", () => {
  it('are refused to the o-series and GPT-5 before anything is sent, naming field and model', () => {
    for (const model of [
      'o1-mini',
      'o1-preview',
      'o3',
      'o3-2025-04-16',
      'o4-mini',
      'gpt-5',
      'gpt-5-mini',
    ]) {
      const refused = refusal(model, { stop: ['Observation:'] })
      expect(isInvalidChatRequest(refused), model).toBe(true)
      expect(refused, model).toMatchObject({ field: 'stop', reason: PROVIDER_REFUSES_VALUE })
      expect((refused as Error).message, model).toContain(model)
    }
    // A GPT-5.x asked to reason is told how it would take them.
    const refused = refusal('gpt-5.1', {
      stop: ['x'],
      extra: { reasoning_effort: 'high' },
    })
    expect(refused).toMatchObject({ field: 'stop' })
    expect((refused as Error).message).toContain('reasoning_effort "none"')
  })

  it('still go to the models that take them: o3-mini, o1 (not its mini or preview), the -chat models, GPT-5.x not reasoning, names llm does not know', () => {
    for (const model of [
      'gpt-4o',
      'gpt-5-chat-latest',
      'o3-mini',
      'o3-mini-2025-01-31',
      'o1',
      'o1-2024-12-17',
      'my-model',
      'gpt-5.1',
    ]) {
      const body = dialects.openai.buildRequest({ ...base, stop: ['Observation:'] }, model).body
      expect(body['stop'], model).toEqual(['Observation:'])
    }
    const body = dialects.openai.buildRequest(
      { ...base, stop: ['x'], extra: { reasoning_effort: 'none' } },
      'gpt-5.2',
    ).body
    expect(body['stop']).toEqual(['x'])
  })
})
