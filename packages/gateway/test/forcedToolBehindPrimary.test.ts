import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import { APIError } from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A forced tool call (`tool_choice: "required"` or a named function: an
 * extraction, a structured output by function calling) is taken by OpenAI
 * and refused by the Claude models whose thinking is always on (Opus and
 * Sonnet 5.5 and later), and by those that think on a budget beside
 * `reasoning_effort` (Sonnet 4.5). Such a Claude behind an OpenAI primary is
 * left to refuse it when reached, as a temperature Opus 4.7 refuses is: every
 * forced call was refused up front (400 `unsupported_field`), the primary
 * that would have answered never asked.
 */
let harness: Harness
const fakes: FakeProvider[] = []
let primary: FakeProvider
let claude: FakeProvider
beforeAll(async () => {
  const o = await fakeProvider('openai', ['sk-o'])
  const a = await fakeProvider('anthropic', ['sk-a'])
  primary = o.fake
  claude = a.fake
  fakes.push(o.fake, a.fake)
  harness = await startHarness({
    providers: { oa: o.entry, an: a.entry },
    models: {
      'behind-opus': fallback(['oa', 'gpt-4o'], ['an', 'claude-opus-5-5']),
      'behind-sonnet': fallback(['oa', 'gpt-5'], ['an', 'claude-sonnet-4-5']),
      'opus-first': fallback(['an', 'claude-opus-5-5'], ['oa', 'gpt-4o']),
    },
    policy: { maxAttempts: 1 },
  })
  primary.setReply(
    reply.text('', { toolCalls: [{ id: 'call_1', name: 'extract', arguments: { name: 'Ada' } }] }),
  )
})
afterAll(async () => {
  await harness?.close()
  await Promise.all(fakes.map((f) => f.close()))
})

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'extract',
      parameters: { type: 'object', properties: { name: { type: 'string' } } },
    },
  },
]
const named = { type: 'function' as const, function: { name: 'extract' } }

describe('a forced tool call with a Claude fallback that refuses it', () => {
  for (const [model, extra] of [
    ['behind-opus', {}],
    ['behind-sonnet', { reasoning_effort: 'high' as const, max_completion_tokens: 30_000 }],
  ] as const) {
    for (const toolChoice of ['required' as const, named]) {
      it(`is answered by the primary (${model}, ${JSON.stringify(toolChoice)})`, async () => {
        const before = primary.requests.length
        const answer = await harness.client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'Ada Lovelace wrote the first program.' }],
          tools,
          tool_choice: toolChoice,
          ...extra,
        })
        expect(answer.choices[0]?.message.tool_calls?.[0]?.id).toBe('call_1')
        expect(primary.requests.length).toBe(before + 1)
        expect(claude.requests).toHaveLength(0)
      })
    }
  }

  it('is refused by the fallback when reached, naming it, nothing sent to it', async () => {
    primary.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    const error = await harness.client.chat.completions
      .create({
        model: 'behind-opus',
        messages: [{ role: 'user', content: 'x' }],
        tools,
        tool_choice: 'required',
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(error).toBeInstanceOf(APIError)
    const refusal = error as APIError
    expect(refusal.status).toBe(400)
    expect(refusal.code).toBe('unsupported_field')
    expect(refusal.param).toBe('tool_choice')
    expect(refusal.message).toContain('reached as a fallback')
    expect(claude.requests).toHaveLength(0)
  })

  it('is still refused up front when that Claude is the first entry', async () => {
    const before = primary.requests.length
    const error = await harness.client.chat.completions
      .create({
        model: 'opus-first',
        messages: [{ role: 'user', content: 'x' }],
        tools,
        tool_choice: 'required',
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect((error as APIError).status).toBe(400)
    expect((error as APIError).param).toBe('tool_choice')
    expect(primary.requests.length).toBe(before)
    expect(claude.requests).toHaveLength(0)
  })
})
