import { Deadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

const fakes = useFakes()

const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

/** A 200 stream that sends `frames`, then is cut: its connection destroyed once they are written. */
async function cutAfter(frames: string) {
  const server = await rawServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(frames, () => res.destroy())
  })
  servers.push(server)
  return server.baseURL
}

function stream(dialect: 'anthropic' | 'openai', baseURL: string) {
  return callModel({
    models: [fakes.adapterFor(dialect, baseURL, 'big')],
    deadline: Deadline.after(10_000),
    request: { messages: [user('Hi')], maxTokens: 100, stream: true },
    retry: { maxAttempts: 1, delay: FAST_RETRIES },
  }).result
}

const anthropicEvent = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

// Only bookkeeping was missing (Anthropic's `message_stop`, OpenAI's usage
// chunk and `[DONE]`), as when the body ends or goes quiet there — both of
// which are whole answers already.
describe('a stream cut after its stop reason, before its end marker, is the whole answer it was', () => {
  it('Anthropic: cut after message_delta (stop reason and final usage), before message_stop', async () => {
    const baseURL = await cutAfter(
      anthropicEvent('message_start', {
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          content: [],
          model: 'big',
          usage: { input_tokens: 600, output_tokens: 1 },
        },
      }) +
        anthropicEvent('content_block_start', {
          index: 0,
          content_block: { type: 'text', text: '' },
        }) +
        anthropicEvent('content_block_delta', {
          index: 0,
          delta: { type: 'text_delta', text: 'Hello there' },
        }) +
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
      `data: ${JSON.stringify({
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'big',
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`
    const baseURL = await cutAfter(
      chunk({ role: 'assistant', content: 'Hello there' }, null) + chunk({}, 'stop'),
    )
    const answer = await stream('openai', baseURL)
    expect(answer.text).toBe('Hello there')
    expect(answer.finishReason).toBe('stop')
  })
})
