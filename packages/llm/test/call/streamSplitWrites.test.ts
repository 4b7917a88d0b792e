import { type ProviderDialect, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

// A stream written in pieces of a few bytes — characters of two to four
// bytes (and a CRLF, on Gemini's wire) cut across TCP writes — reads as the
// same answer, text, thinking and tool arguments, on each provider's wire.

const fakes = useFakes()

const TEXT = 'Grüße aus 東京 😀 — «ok» 𝔘𝔫𝔦'
const THINKING = 'Überlegung: 思考 🤔'
const ARGS = { city: 'Zürich 東京 😀', n: 42 }

describe.each<ProviderDialect>(['openai', 'anthropic', 'gemini'])('%s', (dialect) => {
  it.each([3, 5])('pieces of %i bytes', async (splitBytes) => {
    const fake = await fakes.start({ dialect })
    // OpenAI's own dialect streams no reasoning text.
    const thinking = dialect === 'openai' ? undefined : THINKING
    fake.enqueue(
      reply.text(TEXT, {
        thinking,
        signature: 'sig',
        toolCalls: [{ name: 'weather', arguments: ARGS }],
        splitBytes,
      }),
    )
    const stream = callModel({
      models: [fakes.adapterFor(dialect, fake.baseURL, `${dialect}-model`)],
      request: {
        messages: [user('hi')],
        // Above Anthropic's thinking budget for `low` (1024), which must fit in it.
        maxTokens: 2048,
        stream: true,
        tools: [{ name: 'weather', parameters: { type: 'object' } }],
        // Gemini and Anthropic send their thinking only when asked for it.
        ...(dialect === 'openai' ? {} : { extra: { reasoning_effort: 'low' } }),
      },
      limits: { admission: false },
    })
    let text = ''
    let thought = ''
    for await (const event of stream) {
      if (event.type === 'text') text += event.text
      if (event.type === 'thinking') thought += event.thinking
    }
    const answer = await stream.result
    expect(text).toBe(TEXT)
    expect(answer.text).toBe(TEXT)
    expect(thought).toBe(thinking ?? '')
    expect(answer.content.find((block) => block.type === 'tool_call')).toMatchObject({
      name: 'weather',
      arguments: ARGS,
    })
  })
})
