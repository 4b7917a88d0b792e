import type { FaultPlan } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { isOutputTruncated } from '../../src/errors/OutputTruncatedError.js'
import { callOnFault } from '../support/callOnFault.js'

// Anthropic's `model_context_window_exceeded` (Claude Sonnet 4.5 and later):
// the generation stopped because the context window is full, not because
// `max_tokens` was reached. It is a `length` finish, but no output-limit
// recovery can help: a raised cap still meets the same full window, and a
// "continue" turn appends the cut answer and a prompt, making the context
// longer. Each step was a billed call that could not succeed — 4 requests
// (raise-cap, continue, continue) before `OutputTruncatedError`. The testkit
// `anthropic` fake sends only `max_tokens` for a `length` reply, so the wire
// bodies are given raw.

type StopReason = 'max_tokens' | 'model_context_window_exceeded' | 'end_turn'

const wholeBody = (stopReason: StopReason, text: string) =>
  JSON.stringify({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content: [{ type: 'text', text }],
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: 100, output_tokens: 7 },
  })

const streamBody = (stopReason: StopReason, text: string) =>
  (
    [
      [
        'message_start',
        {
          type: 'message_start',
          message: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: 'claude-sonnet-4-5-20250929',
            content: [],
            usage: { input_tokens: 100, output_tokens: 1 },
          },
        },
      ],
      [
        'content_block_start',
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } },
      ],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      [
        'message_delta',
        {
          type: 'message_delta',
          delta: { stop_reason: stopReason, stop_sequence: null },
          usage: { output_tokens: 7 },
        },
      ],
      ['message_stop', { type: 'message_stop' }],
    ] as const
  )
    .map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
    .join('')

type Wire = 'whole' | 'sse'

const answer = (wire: Wire, stopReason: StopReason, text: string) =>
  wire === 'whole'
    ? {
        type: 'respond' as const,
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: wholeBody(stopReason, text),
      }
    : {
        type: 'respond' as const,
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        body: streamBody(stopReason, text),
      }

function call(plan: FaultPlan, stream = false) {
  return callOnFault(
    plan,
    (baseURL) => anthropic({ baseURL, apiKey: 'k', model: 'claude-sonnet-4-5' }),
    { stream },
  )
}

describe('a stop because the context window is full (model_context_window_exceeded)', () => {
  for (const wire of ['whole', 'sse'] as const) {
    it(`${wire}: surfaces at once as OutputTruncatedError, no recovery step, one request`, async () => {
      const { error, requests, records } = await call(
        answer(wire, 'model_context_window_exceeded', 'partial answer'),
      )
      expect(requests).toBe(1)
      expect(records.map((r) => r.decision)).toEqual(['success'])
      expect(isOutputTruncated(error)).toBe(true)
      if (!isOutputTruncated(error)) return
      expect(error.recoveries).toEqual([])
      expect(error.response).toMatchObject({
        text: 'partial answer',
        finishReason: 'length',
        providerFinishReason: 'model_context_window_exceeded',
        usage: { inputTokens: 100, outputTokens: 7 },
      })
      expect(error.message).toContain('model_context_window_exceeded')
    })

    it(`${wire}: a continue step that fills the window ends the recovery there`, async () => {
      const { error, requests } = await call((_request, index) =>
        index === 0
          ? answer(wire, 'max_tokens', 'cut ')
          : answer(wire, 'model_context_window_exceeded', 'and window full'),
      )
      expect(requests).toBe(2)
      expect(isOutputTruncated(error)).toBe(true)
      if (!isOutputTruncated(error)) return
      expect(error.recoveries).toEqual(['raise-cap'])
      expect(error.response.text).toBe('and window full')
      expect(error.response.providerFinishReason).toBe('model_context_window_exceeded')
    })

    it(`${wire}: a plain max_tokens stop still recovers as before`, async () => {
      const cut = await call(answer(wire, 'max_tokens', 'cut '))
      expect(cut.requests).toBe(4)
      expect(isOutputTruncated(cut.error)).toBe(true)
      if (!isOutputTruncated(cut.error)) return
      expect(cut.error.recoveries).toEqual(['raise-cap', 'continue', 'continue'])
      expect(cut.error.response.providerFinishReason).toBeUndefined()

      const recovered = await call((_request, index) =>
        index === 0 ? answer(wire, 'max_tokens', 'cut ') : answer(wire, 'end_turn', 'whole answer'),
      )
      expect(recovered.error).toBeUndefined()
      expect(recovered.requests).toBe(2)
      expect(recovered.response).toMatchObject({ text: 'whole answer', finishReason: 'stop' })
    })
  }

  it('streamed: the answer carries the provider reason, asked once', async () => {
    const { response, error, requests } = await call(
      answer('sse', 'model_context_window_exceeded', 'partial answer'),
      true,
    )
    expect(error).toBeUndefined()
    expect(requests).toBe(1)
    expect(response).toMatchObject({
      text: 'partial answer',
      finishReason: 'length',
      providerFinishReason: 'model_context_window_exceeded',
    })
  })

  it('streamed, answered whole: the replayed finish carries the provider reason too', async () => {
    const { response, requests } = await call(
      answer('whole', 'model_context_window_exceeded', 'partial answer'),
      true,
    )
    expect(requests).toBe(1)
    expect(response).toMatchObject({
      text: 'partial answer',
      finishReason: 'length',
      providerFinishReason: 'model_context_window_exceeded',
    })
  })
})
