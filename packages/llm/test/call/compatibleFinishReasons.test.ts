import type { FaultPlan } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { ChatResponse } from '../../src/types.js'
import { callOnFault } from '../support/callOnFault.js'

// Finish reasons OpenAI-compatible providers document beyond OpenAI's own,
// each read as `unknown` before — the answer returned as a success:
// - Mistral's `error` ("generation failed") and Zhipu's (z.ai, GLM)
//   `network_error` ("model inference exception"): an answer cut short by
//   the provider, as DeepSeek's `insufficient_system_resource` — a failed
//   attempt, retried and handed to the fallbacks, while nothing of it was
//   delivered. vLLM's and SGLang's `abort` (the engine dropped the request
//   mid-generation) likewise.
// - Zhipu's `sensitive` (the content was stopped by its safety review): a
//   `content_filter` finish, which a caller checks before showing the text.

const wholeBody = (reason: string, text: string) =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: reason }],
    usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
  })

const chunk = (choices: unknown[], usage?: unknown) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...(usage === undefined ? {} : { usage }) })}\n\n`

const streamBody = (reason: string, text: string) =>
  [
    ...(text === ''
      ? []
      : [chunk([{ index: 0, delta: { role: 'assistant', content: text }, finish_reason: null }])]),
    chunk([{ index: 0, delta: {}, finish_reason: reason }]),
    chunk([], { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }),
    'data: [DONE]\n\n',
  ].join('')

const answer = (wire: 'whole' | 'sse', reason: string, text: string) => ({
  type: 'respond' as const,
  status: 200,
  headers: { 'content-type': wire === 'whole' ? 'application/json' : 'text/event-stream' },
  body: wire === 'whole' ? wholeBody(reason, text) : streamBody(reason, text),
})

async function call(plan: FaultPlan, stream = false) {
  const outcome = await callOnFault(
    plan,
    (baseURL) => openAICompatible({ baseURL, apiKey: 'k', model: 'm' }),
    { stream, retry: { delay: { baseDelayMs: 0, maxDelayMs: 0 } } },
  )
  if (outcome.error !== undefined) throw outcome.error
  return { ...outcome, response: outcome.response as ChatResponse }
}

describe('OpenAI-compatible finish reasons of Mistral, Zhipu (z.ai), vLLM and SGLang', () => {
  for (const reason of ['error', 'network_error', 'abort']) {
    for (const wire of ['whole', 'sse'] as const) {
      it(`${wire}: ${reason} is an answer that ended in an error, retried`, async () => {
        const { response, records, requests } = await call(
          (_request, index) =>
            index === 0 ? answer(wire, reason, '') : answer(wire, 'stop', 'ok'),
          wire === 'sse',
        )
        expect(requests).toBe(2)
        expect(response).toMatchObject({ text: 'ok', finishReason: 'stop' })
        expect(records.map((r) => [r.decision, r.errorKind, r.finishReason])).toEqual([
          ['retry', 'server_error', 'error'],
          ['success', undefined, 'stop'],
        ])
        expect(records[0]?.reason).toContain(`finishReason:${reason}`)
      })
    }

    it(`streamed after its first token: ${reason} ends the answer as it came, named`, async () => {
      const { response, requests } = await call(answer('sse', reason, 'partial'), true)
      expect(requests).toBe(1)
      expect(response).toMatchObject({
        text: 'partial',
        finishReason: 'error',
        providerFinishReason: reason,
      })
    })
  }

  for (const wire of ['whole', 'sse'] as const) {
    it(`${wire}: sensitive is a content_filter finish`, async () => {
      const { response, requests } = await call(answer(wire, 'sensitive', 'cut'), wire === 'sse')
      expect(requests).toBe(1)
      expect(response.finishReason).toBe('content_filter')
    })
  }
})
