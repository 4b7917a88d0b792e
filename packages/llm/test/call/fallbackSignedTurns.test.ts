import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage, ToolDefinition } from '../../src/types.js'
import { useFakes } from './support/fakes.js'

/**
 * A tool loop whose turn was answered by a fallback appends that answer —
 * thinking signed by the fallback's model, and its tool call — to the
 * history. The next turn's request must carry each signature to the model
 * that signed it and to no other: the primary, back again, was sent the
 * fallback's signature (Anthropic and Gemini verify theirs: a 400 that goes
 * to no fallback, every later turn of the conversation refused), and the
 * fallback, reached again, had its own stripped (Anthropic then went
 * without thinking, Gemini 3 got the skip-validator sentinel instead).
 * The answer names its signer (`signedBy`), so a history kept as JSON (a
 * store, a session) goes the same way.
 */
const fakes = useFakes()
const tools: ToolDefinition[] = [
  { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
]
const serverError = {
  anthropic: () =>
    reply.error(500, {
      type: 'error',
      error: { type: 'api_error', message: 'Internal server error' },
    }),
  gemini: () =>
    reply.error(500, {
      error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' },
    }),
}
type Dialect = 'anthropic' | 'gemini'
const MODEL = { anthropic: 'claude-sonnet-4-5', gemini: 'gemini-3-flash-preview' }

async function pair(first: Dialect, second: Dialect, throughJson = false) {
  const a = await fakes.start({ dialect: first })
  const b = await fakes.start({ dialect: second })
  const make = (dialect: Dialect, baseURL: string) =>
    fakes.adapter(
      dialect === 'anthropic'
        ? anthropic({ baseURL, apiKey: 'k', model: MODEL.anthropic })
        : gemini({ baseURL, apiKey: 'k', model: MODEL.gemini }),
    )
  const models = [make(first, a.baseURL), make(second, b.baseURL)]
  let messages: ChatMessage[] = [{ role: 'user', content: 'Weather in Paris?' }]
  const turn = () =>
    callModel({
      models,
      request: { messages, tools, maxTokens: 4000, extra: { reasoning_effort: 'low' } },
      limits: { admission: false },
      retry: { maxAttempts: 1 },
    })
  // Turn 1: the primary fails, the fallback answers with signed thinking and a call.
  a.enqueue(serverError[first]())
  b.enqueue(
    reply.text('', {
      thinking: 'Call the tool.',
      signature: 'SIGNED-BY-B',
      toolCalls: [{ name: 'weather', arguments: { city: 'Paris' } }],
    }),
  )
  const first1 = await turn()
  expect(first1.provider).toBe(second)
  messages.push({ role: 'assistant', content: first1.content })
  const call = first1.content.find((block) => block.type === 'tool_call')
  if (call?.type !== 'tool_call') throw new Error('no tool call')
  messages.push({
    role: 'tool',
    content: [{ type: 'tool_result', toolCallId: call.id, content: '18 °C' }],
  })
  if (throughJson) messages = JSON.parse(JSON.stringify(messages)) as ChatMessage[]
  return { a, b, turn }
}

describe('a tool loop turn answered by a fallback, continued', () => {
  for (const [first, second] of [
    ['anthropic', 'gemini'],
    ['gemini', 'anthropic'],
  ] as Array<[Dialect, Dialect]>) {
    it(`does not send the fallback's signature to the primary, the history kept as JSON or not (${first} → ${second})`, async () => {
      for (const throughJson of [false, true]) {
        const { a, turn } = await pair(first, second, throughJson)
        a.enqueue(reply.text('18 °C in Paris.'))
        const answer = await turn()
        expect(answer.provider).toBe(first)
        expect(a.requests.at(-1)?.rawBody).not.toContain('SIGNED-BY-B')
      }
    })

    it(`sends the fallback its own signature when it answers again, the history kept as JSON or not (${first} → ${second})`, async () => {
      for (const throughJson of [false, true]) {
        const { a, b, turn } = await pair(first, second, throughJson)
        a.enqueue(serverError[first]())
        b.enqueue(reply.text('18 °C in Paris.'))
        const answer = await turn()
        expect(answer.provider).toBe(second)
        const body = b.requests.at(-1)?.body as Record<string, unknown>
        expect(b.requests.at(-1)?.rawBody).toContain('SIGNED-BY-B')
        if (second === 'anthropic') {
          // Its thinking goes back signed, so the loop's turn keeps thinking on.
          expect(body['thinking']).toEqual({ type: 'enabled', budget_tokens: 1024 })
        } else {
          expect(b.requests.at(-1)?.rawBody).not.toContain('skip_thought_signature_validator')
        }
      }
    })
  }
})
