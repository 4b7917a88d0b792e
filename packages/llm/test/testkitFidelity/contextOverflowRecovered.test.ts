import { anthropicErrors, deepseekErrors, reply } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

/**
 * Two context-window refusals that name no context code of their own:
 * DeepSeek's 400 (OpenAI's words, `code: "invalid_request_error"`) and
 * Anthropic's "input length and `max_tokens` exceed context limit". Read as
 * `bad_request`, each ended the call with no recovery step run; the smaller
 * history is what the provider asks for.
 */
const fakes = useFakes()

const history: ChatMessage[] = [
  user('old question'),
  { role: 'assistant', content: 'old answer' },
  user('the question that matters'),
]

it.each([
  ['deepseek', deepseekErrors.contextTooLong()],
  ['anthropic', anthropicErrors.contextLimitWithMaxTokens()],
] as const)(
  '%s: the context-window refusal runs the recovery step and the smaller history is answered',
  async (dialect, refusal) => {
    const fake = await fakes.start({ dialect })
    fake.enqueue(refusal, reply.text('answered'))
    const options = { baseURL: fake.baseURL, apiKey: 'k', model: 'm' }
    const model = fakes.adapter(
      dialect === 'anthropic' ? anthropic(options) : openAICompatible({ ...options, dialect }),
    )
    const steps: string[] = []
    const response = await callModel({
      models: [model],
      request: { messages: history, maxTokens: 64 },
      recovery: {
        collapse: (messages) => {
          steps.push('collapse')
          return messages.slice(2)
        },
      },
    })
    expect(response.text).toBe('answered')
    expect(steps).toEqual(['collapse'])
    expect(fake.requests.map((r) => (r.body as { messages: unknown[] }).messages.length)).toEqual([
      3, 1,
    ])
  },
)
