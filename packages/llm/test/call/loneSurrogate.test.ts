import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import {
  type InvalidChatRequestError,
  isInvalidChatRequest,
} from '../../src/errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest, ThinkingBlock, ToolCallBlock } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

// Half an emoji: what `"a\ud83d"` (valid JSON) parses to, or a string cut
// inside a surrogate pair.
const HALF_EMOJI = 'a\ud83d'

/**
 * A lone UTF-16 surrogate has no UTF-8 form. JSON.stringify writes it as a
 * `\ud83d` escape, which Anthropic's parser (and DeepSeek's) refuses:
 * 400 "The request body is not valid JSON: no low surrogate in string" —
 * a body the caller never wrote, naming no field, and a bad request that
 * never falls back. Refused before sending instead, naming the field.
 */
describe('a lone surrogate in the request', () => {
  const refusal = async (request: ChatRequest): Promise<InvalidChatRequestError> => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-x')
    const error = await callModel({
      models: [model],
      request,
      limits: { admission: false },
    }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(fake.requests).toHaveLength(0)
    expect(isInvalidChatRequest(error), String(error)).toBe(true)
    return error as InvalidChatRequestError
  }

  it('in a message’s text is refused for Anthropic naming messages[i].content, nothing sent', async () => {
    const error = await refusal({ messages: [user('hi'), user(HALF_EMOJI)], maxTokens: 8 })
    expect(error.field).toBe('messages[1].content')
    expect(error.message).toMatch(/surrogate/)
  })

  it('in a system message, a tool result or a tool call’s arguments is refused naming where', async () => {
    const system: ChatMessage = { role: 'system', content: `be ${HALF_EMOJI}` }
    expect((await refusal({ messages: [system, user('hi')], maxTokens: 8 })).field).toBe(
      'messages[0].content',
    )
    const call: ChatMessage = {
      role: 'assistant',
      content: [
        { type: 'tool_call', id: 'c1', name: 'f', arguments: {} },
        { type: 'tool_call', id: 'c2', name: 'f', arguments: { q: [HALF_EMOJI] } },
      ],
    }
    const results: ChatMessage = {
      role: 'tool',
      content: [
        { type: 'tool_result', toolCallId: 'c1', content: 'ok' },
        { type: 'tool_result', toolCallId: 'c2', content: 'ok' },
      ],
    }
    expect((await refusal({ messages: [user('hi'), call, results], maxTokens: 8 })).field).toBe(
      'messages[1].tool_calls[1].function.arguments',
    )
    const cleanCall: ChatMessage = {
      role: 'assistant',
      content: [{ type: 'tool_call', id: 'c1', name: 'f', arguments: {} }],
    }
    const badResult: ChatMessage = {
      role: 'tool',
      content: [{ type: 'tool_result', toolCallId: 'c1', content: HALF_EMOJI }],
    }
    expect(
      (await refusal({ messages: [user('hi'), cleanCall, badResult], maxTokens: 8 })).field,
    ).toBe('messages[2].content')
  })

  it('a whole emoji (a surrogate pair) goes to Anthropic as it is', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: reply.text('ok') })
    const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-x')
    const response = await callModel({
      models: [model],
      request: { messages: [user('a\ud83d\ude00 \ud83d\ude00')], maxTokens: 8 },
      limits: { admission: false },
    })
    expect(response.text).toBe('ok')
    expect(fake.requests).toHaveLength(1)
  })

  it('DeepSeek refuses it too (refuseFields, what the gateway asks of a fallback list)', () => {
    const request: ChatRequest = { messages: [user('\udc00 low half')], maxTokens: 8 }
    let error: unknown
    try {
      dialects.deepseek.refuseFields?.(request)
    } catch (e) {
      error = e
    }
    expect(isInvalidChatRequest(error)).toBe(true)
    expect((error as InvalidChatRequestError).field).toBe('messages[0].content')
  })

  it('in a tool definition, a stop sequence or an extra field is refused naming it', () => {
    const field = (patch: Partial<ChatRequest>): string | undefined => {
      try {
        dialects.anthropic.buildRequest({ messages: [user('hi')], maxTokens: 8, ...patch }, 'c')
      } catch (error) {
        if (isInvalidChatRequest(error)) return error.field
        throw error
      }
      return undefined
    }
    const tool = { name: 'f', parameters: { type: 'object' } }
    expect(field({ tools: [tool, { ...tool, description: HALF_EMOJI }] })).toBe('tools[1]')
    expect(field({ stop: ['END', `\ude00`] })).toBe('stop[1]')
    expect(field({ extra: { user: HALF_EMOJI } })).toBe('user')
    expect(field({ stop: ['\ud83d\ude00'] })).toBeUndefined()
  })

  /**
   * The check reads what each dialect sends, not the request as built:
   * a half the builder never sends, or sends whole, is no lone surrogate on
   * the wire, and refusing it turned a valid request into a 400.
   */
  describe('what the dialect does not send as it is, it does not refuse', () => {
    const built = (dialect: 'anthropic' | 'deepseek', request: ChatRequest): string =>
      JSON.stringify(dialects[dialect].buildRequest(request, 'm').body)
    const refusedAt = (dialect: 'anthropic' | 'deepseek', request: ChatRequest): unknown => {
      try {
        dialects[dialect].buildRequest(request, 'm')
      } catch (error) {
        if (isInvalidChatRequest(error)) return error.field
        throw error
      }
      return undefined
    }
    // A JSON escape of a lone surrogate, as JSON.stringify writes one.
    const LONE_ESCAPE = /(?<!\\)\\u[dD][89abAB]/

    it('DeepSeek: an emoji split across two text parts goes whole (the parts are joined)', () => {
      const split: ChatRequest = {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a\ud83d' },
              { type: 'text', text: '\ude00b' },
            ],
          },
        ],
        maxTokens: 8,
      }
      const body = JSON.parse(built('deepseek', split)) as { messages: { content: string }[] }
      expect(body.messages[0]?.content).toBe('a\u{1f600}b')
      expect(dialects.deepseek.refuseFields?.(split)).toBeUndefined()
      // Still refused when the joined text keeps a lone half.
      const lone: ChatRequest = {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a\ud83d' },
              { type: 'text', text: 'b' },
            ],
          },
        ],
        maxTokens: 8,
      }
      expect(refusedAt('deepseek', lone)).toBe('messages[0].content')
    })

    it('DeepSeek: tool-call arguments kept as text go as that text, not the parsed value', () => {
      const rawArguments = '{"q":"\\ud83d"}'
      const call = (block: Partial<ToolCallBlock>): ChatRequest => ({
        messages: [
          user('hi'),
          {
            role: 'assistant',
            content: [{ type: 'tool_call', id: 'c1', name: 'f', arguments: {}, ...block }],
          },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'c1', content: 'ok' }] },
        ],
        maxTokens: 8,
      })
      const escaped = call({ arguments: JSON.parse(rawArguments), rawArguments })
      expect(built('deepseek', escaped)).not.toMatch(LONE_ESCAPE)
      // The parsed value alone (no text kept) goes as JSON.stringify's
      // text: the same escaped bytes, not refused. A string given as the
      // arguments goes as it is, and is.
      const parsed = call({ arguments: JSON.parse(rawArguments) })
      expect(refusedAt('deepseek', parsed)).toBeUndefined()
      expect(built('deepseek', parsed)).toBe(built('deepseek', escaped))
      expect(refusedAt('deepseek', call({ arguments: `{"q":"${HALF_EMOJI}"}` }))).toBe(
        'messages[1].tool_calls[0].function.arguments',
      )
    })

    it('DeepSeek: thinking in the history is not sent, so not refused', () => {
      const request: ChatRequest = {
        messages: [
          user('hi'),
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: `pondering ${HALF_EMOJI}` },
              { type: 'text', text: 'answer' },
            ],
          },
          user('more'),
        ],
        maxTokens: 8,
      }
      expect(built('deepseek', request)).not.toMatch(/pondering/)
    })

    it('DeepSeek with replayThinking: thinking sent as reasoning_content is refused, nothing sent', async () => {
      const fake = await fakes.start({ dialect: 'deepseek', reply: reply.text('ok') })
      const adapter = (replayThinking: boolean) =>
        fakes.adapter(
          openAICompatible({
            baseURL: fake.baseURL,
            apiKey: 'sk',
            model: 'deepseek-chat',
            dialect: 'deepseek',
            replayThinking,
          }),
        )
      const history = (thinking: ThinkingBlock[]): ChatRequest => ({
        messages: [
          user('hi'),
          { role: 'assistant', content: [...thinking, { type: 'text', text: 'answer' }] },
          user('more'),
        ],
        maxTokens: 8,
      })
      const lone = history([{ type: 'thinking', thinking: `pondering ${HALF_EMOJI}` }])
      const error = await callModel({
        models: [adapter(true)],
        request: lone,
        limits: { admission: false },
      }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(isInvalidChatRequest(error), String(error)).toBe(true)
      expect((error as InvalidChatRequestError).field).toBe('messages[1].content')
      expect(fake.requests).toHaveLength(0)
      // Not replayed, it is not sent, so not refused; an emoji split across
      // two thinking blocks is joined whole.
      const unsent = await callModel({
        models: [adapter(false)],
        request: lone,
        limits: { admission: false },
      })
      expect(unsent.text).toBe('ok')
      const split = history([
        { type: 'thinking', thinking: 'a\ud83d' },
        { type: 'thinking', thinking: '\ude00' },
      ])
      const whole = await callModel({
        models: [adapter(true)],
        request: split,
        limits: { admission: false },
      })
      expect(whole.text).toBe('ok')
      const sent = fake.requests[1]?.body as { messages: Record<string, unknown>[] }
      expect(sent.messages[1]?.['reasoning_content']).toBe('a\ud83d\ude00')
    })

    it('Anthropic: unsigned thinking is dropped, so not refused; signed thinking is', () => {
      const history = (thinking: ThinkingBlock): ChatRequest => ({
        messages: [
          user('hi'),
          { role: 'assistant', content: [thinking, { type: 'text', text: 'answer' }] },
          user('more'),
        ],
        maxTokens: 8,
      })
      const unsigned = history({ type: 'thinking', thinking: `pondering ${HALF_EMOJI}` })
      expect(built('anthropic', unsigned)).not.toMatch(/pondering/)
      const signed = history({
        type: 'thinking',
        thinking: `pondering ${HALF_EMOJI}`,
        signature: 's',
      })
      expect(refusedAt('anthropic', signed)).toBe('messages[1].content')
    })

    it('Anthropic: a system message sends its text alone, so nothing else of it is refused', () => {
      const request: ChatRequest = {
        messages: [
          {
            role: 'system',
            content: [
              { type: 'text', text: 'Be brief.' },
              { type: 'tool_result', toolCallId: 'x', content: `a${HALF_EMOJI}` },
            ],
          },
          user('hi'),
        ],
        maxTokens: 8,
      }
      expect(refusedAt('anthropic', request)).toBeUndefined()
      expect(built('anthropic', request)).not.toMatch(LONE_ESCAPE)
    })

    it('Anthropic: a tool-call id it rewrites to ASCII is not refused', () => {
      const id = `call_${HALF_EMOJI}`
      const request: ChatRequest = {
        messages: [
          user('hi'),
          { role: 'assistant', content: [{ type: 'tool_call', id, name: 'f', arguments: {} }] },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: id, content: 'ok' }] },
        ],
        maxTokens: 8,
      }
      const body = JSON.parse(built('anthropic', request)) as {
        messages: { content: { id?: string; tool_use_id?: string }[] }[]
      }
      const sentId = body.messages[1]?.content[0]?.id
      expect(sentId).toMatch(/^[a-zA-Z0-9_-]+$/)
      expect(body.messages[2]?.content[0]?.tool_use_id).toBe(sentId)
    })
  })

  it('OpenAI takes it: sent as the caller wrote it', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const response = await callModel({
      models: [model],
      request: { messages: [user(HALF_EMOJI)], maxTokens: 8 },
      limits: { admission: false },
    })
    expect(response.text).toBe('ok')
    expect(fake.requests).toHaveLength(1)
  })
})
