import { anthropicErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest, ContentBlock } from '../../src/types.js'
import { useFakes } from '../call/support/fakes.js'

/**
 * A tool loop is one assistant turn, and with thinking on Anthropic answers
 * 400 to a turn that does not start with its signed thinking: "messages.1.
 * content.0.type: Expected `thinking` or `redacted_thinking`, but found
 * `tool_use`. When `thinking` is enabled, a final `assistant` message must
 * start with a thinking block". A history without the signature — an
 * OpenAI client's (no field for it), or one that fell back from another
 * Claude model (the foreign signature stripped) — failed every loop's
 * second request with `reasoning_effort`. That request now goes without
 * thinking (the docs' "toggling thinking" rules); the next user message
 * thinks again. A prefill, which Anthropic refuses beside thinking, is
 * refused first, naming `messages`.
 */
const fakes = useFakes()
const tools = [{ name: 'weather', parameters: { type: 'object', properties: {} } }]
const call: ContentBlock = { type: 'tool_call', id: 'toolu_1', name: 'weather', arguments: {} }
const result: ChatMessage = {
  role: 'tool',
  content: [{ type: 'tool_result', toolCallId: 'toolu_1', content: '18 °C' }],
}
const loop = (assistant: ContentBlock[]): ChatMessage[] => [
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: assistant },
  result,
]

const build = (messages: ChatMessage[], model: string, effort = 'low') =>
  dialects.anthropic.buildRequest(
    { messages, tools, maxTokens: 32000, extra: { reasoning_effort: effort } } as ChatRequest,
    model,
  ).body as Record<string, unknown>

const MODELS = ['claude-sonnet-4-5', 'claude-opus-4-6']

describe('reasoning_effort to Anthropic in a tool loop', () => {
  it('continues a turn that has no signed thinking without thinking', () => {
    for (const model of MODELS) {
      for (const assistant of [
        [call],
        [{ type: 'thinking', thinking: 'unsigned, as an OpenAI client sends it' }, call],
        [{ type: 'text', text: 'Let me look.' } as ContentBlock, call],
      ] as ContentBlock[][]) {
        const body = build(loop(assistant), model)
        expect(body, model).not.toHaveProperty('thinking')
        expect(body).not.toHaveProperty('output_config')
      }
    }
  })

  it('thinks on when the turn starts with signed thinking, and again at the next user message', () => {
    const signed: ContentBlock = { type: 'thinking', thinking: 'call it', signature: 'sig-1' }
    const redacted: ContentBlock = {
      type: 'thinking',
      thinking: '',
      signature: 'x',
      redacted: true,
    }
    for (const model of MODELS) {
      expect(build(loop([signed, call]), model)['thinking'], model).toBeDefined()
      expect(build(loop([redacted, call]), model)['thinking'], model).toBeDefined()
      // A second round of the loop: the turn started with the thinking.
      const longer: ChatMessage[] = [
        ...loop([signed, call]),
        { role: 'assistant', content: [{ ...call, id: 'toolu_2' }] },
        { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'toolu_2', content: 'ok' }] },
      ]
      expect(build(longer, model)['thinking'], model).toBeDefined()
      // The loop's turn ended: a new question thinks, whatever came before.
      const next: ChatMessage[] = [
        ...loop([call]),
        { role: 'assistant', content: 'It is 18 °C.' },
        { role: 'user', content: 'And in Rome?' },
      ]
      expect(build(next, model)['thinking'], model).toBeDefined()
    }
  })

  it('refuses a prefill beside thinking, naming messages; none sends it (but to Claude 4.6 and later, which refuse any)', () => {
    const prefill: ChatMessage[] = [
      { role: 'user', content: 'JSON please' },
      { role: 'assistant', content: '{' },
    ]
    const refusal = (model: string, effort?: string) => {
      try {
        build(prefill, model, effort)
      } catch (error) {
        return error
      }
      return undefined
    }
    for (const model of MODELS) {
      const refused = refusal(model)
      expect(isInvalidChatRequest(refused), model).toBe(true)
      expect(refused).toMatchObject({ field: 'messages' })
      expect((refused as Error).message).toContain('prefill')
    }
    expect(build(prefill, 'claude-sonnet-4-5', 'none')).not.toHaveProperty('thinking')
    // Opus 4.6 answers 400 to a prefill without thinking too.
    expect(refusal('claude-opus-4-6', 'none')).toMatchObject({ field: 'messages' })
  })

  it('a loop falling back from another Claude model is answered, not refused 400', async () => {
    const busy = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const other = await fakes.start({ dialect: 'anthropic', reply: reply.text('It is 18 °C.') })
    const models = [
      fakes.adapter(anthropic({ baseURL: busy.baseURL, apiKey: 'k', model: 'claude-opus-4-6' })),
      fakes.adapter(anthropic({ baseURL: other.baseURL, apiKey: 'k', model: 'claude-sonnet-4-5' })),
    ]
    const signed: ContentBlock = { type: 'thinking', thinking: 'call it', signature: 'sig-opus' }
    const answer = await callModel({
      models,
      request: {
        messages: loop([signed, call]),
        tools,
        maxTokens: 4000,
        extra: { reasoning_effort: 'low' },
      },
      limits: { admission: false },
      retry: { max529Retries: 0 },
    })
    expect(answer.text).toBe('It is 18 °C.')
    // The first model was sent its own signed thinking, with thinking on.
    expect(busy.requests[0]?.body).toMatchObject({ thinking: { type: 'adaptive' } })
    expect(other.requests[0]?.body).not.toHaveProperty('thinking')
  })
})
