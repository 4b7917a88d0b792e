import type { FaultPlan } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { isOutputTruncated } from '../../src/errors/OutputTruncatedError.js'
import { callOnFault } from '../support/callOnFault.js'

// z.ai's (Zhipu GLM's) OpenAI-compatible API ends an answer whose context
// window filled with `finish_reason: "model_context_window_exceeded"`, the
// name Anthropic uses for the same stop; Mistral's says `model_length`.
// Unknown to the OpenAI dialect, it
// was `finishReason: 'unknown'` and the cut answer came back as a success:
// a caller checking `finishReason === 'length'` took a truncated answer for
// a whole one (and an agent loop whose turn "did not finish" asked again).
// It is a `length` stop that no output-limit recovery can lift, as
// Anthropic's: surfaced at once, the reason kept as `providerFinishReason`.

type Reason = 'length' | 'model_context_window_exceeded' | 'model_length' | 'stop'

const wholeBody = (reason: Reason, text: string) =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'glm-4.6',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: reason }],
    usage: { prompt_tokens: 100, completion_tokens: 7, total_tokens: 107 },
  })

const chunk = (choices: unknown[], usage?: unknown) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'glm-4.6', choices, ...(usage === undefined ? {} : { usage }) })}\n\n`

const streamBody = (reason: Reason, text: string) =>
  [
    chunk([{ index: 0, delta: { role: 'assistant', content: text }, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, finish_reason: reason }]),
    chunk([], { prompt_tokens: 100, completion_tokens: 7, total_tokens: 107 }),
    'data: [DONE]\n\n',
  ].join('')

type Wire = 'whole' | 'sse'

const answer = (wire: Wire, reason: Reason, text: string) => ({
  type: 'respond' as const,
  status: 200,
  headers: { 'content-type': wire === 'whole' ? 'application/json' : 'text/event-stream' },
  body: wire === 'whole' ? wholeBody(reason, text) : streamBody(reason, text),
})

function call(plan: FaultPlan, stream = false) {
  return callOnFault(
    plan,
    (baseURL) => openAICompatible({ baseURL, apiKey: 'k', model: 'glm-4.6' }),
    { stream },
  )
}

describe('OpenAI-compatible: finish_reason model_context_window_exceeded (z.ai)', () => {
  for (const wire of ['whole', 'sse'] as const) {
    it(`${wire}: surfaces at once as OutputTruncatedError, no recovery step, one request`, async () => {
      const { error, requests, records } = await call(
        answer(wire, 'model_context_window_exceeded', 'partial answer'),
      )
      expect(requests).toBe(1)
      expect(records.map((r) => [r.decision, r.finishReason])).toEqual([['success', 'length']])
      expect(isOutputTruncated(error)).toBe(true)
      if (!isOutputTruncated(error)) return
      expect(error.recoveries).toEqual([])
      expect(error.response).toMatchObject({
        text: 'partial answer',
        finishReason: 'length',
        providerFinishReason: 'model_context_window_exceeded',
        usage: { inputTokens: 100, outputTokens: 7 },
      })
      expect(error.message).toContain('context window is full')
    })

    it(`${wire}: a raise-cap step that fills the window ends the recovery there`, async () => {
      const { error, requests } = await call((_request, index) =>
        index === 0
          ? answer(wire, 'length', 'cut ')
          : answer(wire, 'model_context_window_exceeded', 'and window full'),
      )
      expect(requests).toBe(2)
      expect(isOutputTruncated(error)).toBe(true)
      if (!isOutputTruncated(error)) return
      expect(error.recoveries).toEqual(['raise-cap'])
      expect(error.response.providerFinishReason).toBe('model_context_window_exceeded')
    })

    it(`${wire}: a plain length stop still recovers, with no provider reason`, async () => {
      const { error, requests } = await call(answer(wire, 'length', 'cut '))
      expect(requests).toBe(4)
      expect(isOutputTruncated(error)).toBe(true)
      if (!isOutputTruncated(error)) return
      expect(error.recoveries).toEqual(['raise-cap', 'continue', 'continue'])
      expect(error.response.providerFinishReason).toBeUndefined()
    })
  }

  for (const wire of ['whole', 'sse'] as const) {
    it(`${wire}: Mistral's model_length is the same full window`, async () => {
      const { error, requests } = await call(answer(wire, 'model_length', 'partial answer'))
      expect(requests).toBe(1)
      expect(isOutputTruncated(error)).toBe(true)
      if (!isOutputTruncated(error)) return
      expect(error.recoveries).toEqual([])
      expect(error.response).toMatchObject({
        finishReason: 'length',
        providerFinishReason: 'model_length',
      })
    })
  }

  it('streamed: the answer is a length stop carrying the provider reason, asked once', async () => {
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
      finishReason: 'length',
      providerFinishReason: 'model_context_window_exceeded',
    })
  })
})
