import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { openAIChunk } from '../call/support/streamingServer.js'
import { anthropicEvent, anthropicTextOpening } from './support/anthropicFrames.js'
import { useStreamServers } from './support/streamServers.js'

const fakes = useFakes()

const { cutAfter } = useStreamServers()

function stream(dialect: 'anthropic' | 'openai', baseURL: string) {
  return callModel({
    models: [fakes.adapterFor(dialect, baseURL, 'big')],
    deadline: Deadline.after(10_000),
    request: { messages: [user('Hi')], maxTokens: 100, stream: true },
    retry: { maxAttempts: 1, delay: FAST_RETRIES },
  }).result
}

// Only bookkeeping was missing (Anthropic's `message_stop`, OpenAI's usage
// chunk and `[DONE]`), as when the body ends or goes quiet there — both of
// which are whole answers already.
describe('a stream cut after its stop reason, before its end marker, is the whole answer it was', () => {
  it('Anthropic: cut after message_delta (stop reason and final usage), before message_stop', async () => {
    const baseURL = await cutAfter(
      anthropicTextOpening({ model: 'big', inputTokens: 600, text: 'Hello there' }) +
        anthropicEvent('content_block_stop', { index: 0 }) +
        anthropicEvent('message_delta', {
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 3 },
        }),
    )
    const answer = await stream('anthropic', baseURL.replace(/\/v1$/, ''))
    expect(answer.text).toBe('Hello there')
    expect(answer.finishReason).toBe('stop')
    expect(answer.usage).toMatchObject({ inputTokens: 600, outputTokens: 3 })
  })

  it('OpenAI: cut after the finish_reason chunk, before the usage chunk and [DONE]', async () => {
    const chunk = (delta: unknown, finish: string | null) =>
      openAIChunk(delta, finish, { id: 'c1', model: 'big' })
    const baseURL = await cutAfter(
      chunk({ role: 'assistant', content: 'Hello there' }, null) + chunk({}, 'stop'),
    )
    const answer = await stream('openai', baseURL)
    expect(answer.text).toBe('Hello there')
    expect(answer.finishReason).toBe('stop')
  })
})
