import { callModel, gemini } from '@hourglass/llm'
import { faultServer } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { parseGeminiResponse } from '../../src/dialects/gemini/response.js'

/**
 * A Gemini answer whose candidate is no object (`candidates: [null]`, a
 * broken proxy's) holds no answer, as `candidates: []` does: it was read as
 * an empty success — no text, finish reason `unknown`, billed as an answer.
 */
describe('a Gemini candidate that is no object', () => {
  it('is a malformed reply, not an empty answer', () => {
    for (const candidates of [[null], [7], ['STOP'], [[]]]) {
      expect(() => parseGeminiResponse({ candidates })).toThrow(
        expect.objectContaining({ code: 'PROVIDER_REPLY' }),
      )
    }
  })

  it('through callModel: the same unreadable-answer failure as no candidates', async () => {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ candidates: [null] }),
    })
    try {
      const failure = await callModel({
        models: [gemini({ baseURL: server.url, apiKey: 'k', model: 'm' })],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10 },
        deadline: false,
        limits: { admission: false },
        retry: { budgets: false },
      }).catch((error: unknown) => error)
      expect(failure).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
      // Not resent to this model: an unreadable whole answer was generated, and billed.
      expect(server.records).toHaveLength(1)
    } finally {
      await server.close()
    }
  })
})
