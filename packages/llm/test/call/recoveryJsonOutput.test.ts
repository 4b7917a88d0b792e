import { describe, expect, it } from 'vitest'
import { recoverOutputLimit } from '../../src/call/recoverOutputLimit.js'
import { OutputTruncatedError } from '../../src/errors/OutputTruncatedError.js'
import type { ChatRequest, ChatResponse } from '../../src/types.js'

const schema = {
  type: 'object',
  properties: { name: { type: 'string' }, bio: { type: 'string' } },
  required: ['name', 'bio'],
  additionalProperties: false,
}

function answer(text: string, finishReason: ChatResponse['finishReason']): ChatResponse {
  return {
    id: `r-${text.length}`,
    model: 'm',
    provider: 'p',
    content: [{ type: 'text', text }],
    text,
    finishReason,
    usage: { inputTokens: 10, outputTokens: 5 },
  }
}

/** Runs the recovery; every step is answered with a whole JSON document, as JSON mode answers. */
async function recover(request: ChatRequest, first: ChatResponse, ...next: ChatResponse[]) {
  const asked: ChatRequest[] = []
  const outcome = await recoverOutputLimit(
    first,
    request,
    {},
    async (step) => {
      asked.push(step)
      const response = next.shift()
      if (response === undefined) throw new Error('asked for more answers than the test gave')
      return { response, request: step }
    },
    () => asked.length,
  ).then(
    (response) => ({ response, error: undefined }),
    (error: unknown) => ({ response: undefined, error }),
  )
  return { ...outcome, asked }
}

describe('max_tokens recovery of a JSON answer', () => {
  for (const format of [
    { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } },
    { type: 'json_object' },
  ]) {
    it(`raises the cap, then ends with what was produced rather than joining a continuation (${format.type})`, async () => {
      const request: ChatRequest = {
        messages: [{ role: 'user', content: 'Who was Ada? JSON.' }],
        maxTokens: 20,
        extra: { response_format: format },
      }
      const { response, error, asked } = await recover(
        request,
        answer('{"name":"Ada","bio":"Ada was', 'length'),
        answer('{"name":"Ada","bio":"Ada was an English', 'length'),
        answer('{"name":"Ada","bio":"mathematician."}', 'stop'),
      )
      // It resolved with '{"name":"Ada","bio":"Ada was an English{"name":"Ada",…}',
      // finishReason 'stop': text no JSON.parse reads, after a billed continuation.
      expect(response).toBeUndefined()
      expect(error).toBeInstanceOf(OutputTruncatedError)
      const truncated = error as OutputTruncatedError
      expect(truncated.recoveries).toEqual(['raise-cap'])
      expect(truncated.response.text).toBe('{"name":"Ada","bio":"Ada was an English')
      expect(asked.map((r) => r.maxTokens)).toEqual([40])
    })
  }

  it('still continues a text answer', async () => {
    const request: ChatRequest = { messages: [{ role: 'user', content: 'Go.' }], maxTokens: 20 }
    const { response, asked } = await recover(
      request,
      answer('cut ', 'length'),
      answer('cut again ', 'length'),
      answer('end', 'stop'),
    )
    expect(response?.text).toBe('cut again end')
    expect(asked).toHaveLength(2)
  })
})
