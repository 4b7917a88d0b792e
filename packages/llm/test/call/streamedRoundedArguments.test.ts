import { reply } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

// Anthropic's and Gemini's whole answers keep a call's text where parsing
// rounded an integer in it (`rawArguments`); the same answer streamed and
// collected kept only the rounded object, so it replayed another number.

const fakes = useFakes()
const text = '{"id": 1859312345678901234, "tag": "x"}'

for (const dialect of ['anthropic', 'gemini'] as const) {
  it(`${dialect}: a streamed call whose arguments parsing rounded keeps their text, as whole`, async () => {
    const fake = await fakes.start({ dialect })
    const toolCalls = [{ id: 'c1', name: 'tweet', arguments: undefined, argumentsJson: text }]
    const small = [{ id: 'c2', name: 'tweet', arguments: { id: 7 } }]
    fake.enqueue(reply.text('', { toolCalls }))
    fake.enqueue(reply.text('', { toolCalls }))
    fake.enqueue(reply.text('', { toolCalls: small }))
    const model = fakes.adapterFor(dialect, fake.baseURL, 'fake-model')
    const request = { messages: [user('tweet it')], maxTokens: 100 }
    const callOf = (r: ChatResponse) => r.content.find((b) => b.type === 'tool_call')
    const whole = await callModel({ models: [model], request })
    const streamed = await (
      callModel({ models: [model], request: { ...request, stream: true } }) as {
        result: Promise<ChatResponse>
      }
    ).result
    expect(callOf(whole)).toMatchObject({ rawArguments: text })
    expect(callOf(streamed)).toMatchObject({ rawArguments: text })
    // Nothing rounded: no text kept, as whole.
    const plain = await (
      callModel({ models: [model], request: { ...request, stream: true } }) as {
        result: Promise<ChatResponse>
      }
    ).result
    expect(callOf(plain)).not.toHaveProperty('rawArguments')
    expect(callOf(plain)).toMatchObject({ arguments: { id: 7 } })
  })
}
