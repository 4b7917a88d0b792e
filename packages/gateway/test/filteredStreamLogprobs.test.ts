import { qwenErrors } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * A stream's log probabilities go out once, on its finish chunk (README,
 * "Log probabilities"). A stream an output filter stopped after its first
 * tokens ends with a `content_filter` finish chunk and `[DONE]`, the text
 * that came kept: that chunk carries the log probabilities of that text,
 * as the provider sent them on each chunk before its refusal.
 */
describe('a stream the output filter stopped keeps the logprobs of what arrived', () => {
  const gw = oneProviderGateway()
  afterEach(() => gw.close())

  it("DashScope's data_inspection_failed after two tokens: their logprobs on the finish", async () => {
    const fake = await gw.one('qwen')
    const refused = qwenErrors.compatibleDataInspectionFailed().body as { error: object }
    fake.enqueue({
      kind: 'text',
      text: 'one two three',
      streamError: {
        afterTokens: 2,
        body: {
          ...refused,
          error: { ...refused.error, message: 'Output data may contain inappropriate content.' },
        },
        status: 400,
      },
    })
    const final = await gw.harness.client.chat.completions
      .stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }], logprobs: true })
      .finalChatCompletion()
    const choice = final.choices[0]!
    expect(choice.message.content).toBe('one two')
    expect(choice.finish_reason).toBe('content_filter')
    expect(choice.logprobs?.content?.map((t) => t.token)).toEqual(['one', ' two'])
  })
})
