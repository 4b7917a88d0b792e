import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/index.js'
import type { ChatMessage } from '../../src/types.js'

// A tool call kept as its text (`rawArguments`, as a model or a gateway
// client wrote it) whose text parses to a number JSON cannot write:
// `{"t":1e999}` is `{ t: Infinity }`. OpenAI's wire sends the text as it is;
// Anthropic and Gemini take the arguments as an object, which went out as
// `{"t":null}` — a value the model never wrote.
const messages: ChatMessage[] = [
  { role: 'user', content: 'set it' },
  {
    role: 'assistant',
    content: [
      {
        type: 'tool_call',
        id: 'call_1',
        name: 'set',
        arguments: JSON.parse('{"t":1e999}'),
        rawArguments: '{"t":1e999}',
      },
    ],
  },
  { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_1', content: 'ok' }] },
]

describe('tool-call text that parses to a number JSON cannot write', () => {
  it.each(['anthropic', 'gemini'] as const)(
    '%s: refused naming the argument, not sent as null',
    (name) => {
      let thrown: unknown
      try {
        dialects[name].buildRequest({ maxTokens: 10, messages }, 'some-model')
      } catch (error) {
        thrown = error
      }
      expect(isInvalidChatRequest(thrown)).toBe(true)
      expect((thrown as { field: string }).field).toBe(
        'messages[1].tool_calls[0].function.arguments.t',
      )
      expect((thrown as Error).message).toMatch(/Infinity/)
    },
  )

  it('openai: the text goes out as it was written', () => {
    const { body } = dialects.openai.buildRequest({ maxTokens: 10, messages }, 'some-model')
    expect(JSON.stringify(body)).toContain(JSON.stringify('{"t":1e999}'))
  })
})
