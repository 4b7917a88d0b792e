import { anthropicErrors, qwenErrors, reply } from '@hourglass/testkit'
import { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * A stream that breaks after its first token ends with one error event,
 * whose message is what the official SDKs throw (`APIError.message`). It
 * says why, as the same failure before the first token would: an overload,
 * a rate limit and a cut connection read alike otherwise, and the client
 * cannot tell "back off" from "try again now".
 */
describe('a stream broken after its first token says why in its error event', () => {
  const gw = oneProviderGateway()
  afterEach(() => gw.close())

  async function streamError(): Promise<{ text: string; error: unknown }> {
    const stream = await gw.harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    let text = ''
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    })().catch((e: unknown) => e)
    return { text, error }
  }

  it("Anthropic's overloaded_error event mid-stream: the client reads overloaded", async () => {
    const fake = await gw.one('anthropic')
    fake.enqueue(anthropicErrors.overloadedInStream({ afterTokens: 2, text: 'one two three' }))
    const { text, error } = await streamError()
    expect(text).toBe('one two')
    expect(error).toBeInstanceOf(APIError)
    expect(error).toMatchObject({
      code: 'stream_interrupted',
      message:
        'the stream from p/model-x broke after the first token: overloaded (overloaded_error); not restarted',
    })
  })

  it("Qwen's throttling event mid-stream: the client reads rate limited", async () => {
    const fake = await gw.one('qwen')
    fake.enqueue(qwenErrors.throttlingInStream({ afterTokens: 2, text: 'one two three' }))
    const { error } = await streamError()
    expect(error).toMatchObject({
      code: 'stream_interrupted',
      message:
        'the stream from p/model-x broke after the first token: rate limited (Throttling.RateQuota); not restarted',
    })
  })

  it('a connection cut mid-stream: the client reads network', async () => {
    const fake = await gw.one('openai')
    fake.enqueue(reply.text('one two three', { cutAfterTokens: 2 }))
    const { text, error } = await streamError()
    expect(text).toBe('one two')
    expect(error).toMatchObject({
      code: 'stream_interrupted',
      message: 'the stream from p/model-x broke after the first token: network; not restarted',
    })
  })
})
