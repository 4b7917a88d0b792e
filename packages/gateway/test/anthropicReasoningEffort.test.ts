import type { FakeProvider } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'
import { type ReasoningMessage, readReasoning } from './support/reasoning.js'

/**
 * Claude thinks only when the request turns thinking on (`thinking: {type:
 * "enabled", budget_tokens}`, or `{type: "adaptive"}` from Claude 4.6 on);
 * the gateway refused `reasoning_effort` for Anthropic and never asked, so
 * an Anthropic-backed model never answered `reasoning_content` against the
 * real API — while the fake, which sent a scripted thinking unasked, said it
 * did. `reasoning_effort` now turns it on: a client of the official `openai`
 * package gets Claude's thinking as it gets DeepSeek's.
 */

const THOUGHT = 'weighing the options'
const ASK = { messages: [{ role: 'user' as const, content: 'A or B?' }] }

describe('reasoning_effort to an Anthropic-backed model', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  async function start(model: string) {
    const started = await fakeProvider('anthropic', ['sk-ant'])
    fake = started.fake
    harness = await startHarness({
      providers: { a: started.entry },
      models: { m: fallback(['a', model]) },
    })
    return { fake: started.fake, client: harness.client }
  }

  for (const [model, thinking] of [
    ['claude-sonnet-4-5', { thinking: { type: 'enabled', budget_tokens: 1024 } }],
    [
      'claude-opus-4-6',
      {
        thinking: { type: 'adaptive', display: 'summarized' },
        output_config: { effort: 'low' },
      },
    ],
  ] as const) {
    it(`${model}: returns reasoning_content, unstreamed and streamed`, async () => {
      const { fake, client } = await start(model)
      fake.setReply(reply.text('Pick B.', { thinking: THOUGHT, signature: 'sig-1' }))
      const whole = await client.chat.completions.create({
        model: 'm',
        ...ASK,
        reasoning_effort: 'low',
      })
      const message = whole.choices[0]!.message as ReasoningMessage
      expect(message.content).toBe('Pick B.')
      expect(message.reasoning_content).toBe(THOUGHT)
      expect(fake.requests[0]!.body).toMatchObject(thinking)

      const stream = await client.chat.completions.create({
        model: 'm',
        ...ASK,
        reasoning_effort: 'low',
        stream: true,
      })
      const { reasoning, content } = await readReasoning(stream)
      expect(reasoning).toBe(THOUGHT)
      expect(content).toBe('Pick B.')
      expect(fake.requests[1]!.body).toMatchObject({ ...thinking, stream: true })
    })
  }

  it('without it (or with none), Claude does not think: no reasoning_content, none billed', async () => {
    const { fake, client } = await start('claude-sonnet-4-5')
    fake.setReply(reply.text('Pick B.', { thinking: THOUGHT, signature: 'sig-1' }))
    for (const effort of [{}, { reasoning_effort: 'none' as const }]) {
      const whole = await client.chat.completions.create({ model: 'm', ...ASK, ...effort })
      const message = whole.choices[0]!.message as ReasoningMessage
      expect(message.content).toBe('Pick B.')
      expect(message.reasoning_content).toBeUndefined()
      // "Pick B." is 3 tokens: the thinking's are not billed.
      expect(whole.usage?.completion_tokens).toBe(3)
      expect(fake.requests.at(-1)!.body).not.toHaveProperty('thinking')
    }
  })

  it('what Anthropic refuses beside thinking is a 400 naming the field, nothing sent', async () => {
    const { fake, client } = await start('claude-sonnet-4-5')
    const cases: [Record<string, unknown>, string, string][] = [
      [{ temperature: 0.2 }, 'temperature', 'temperature but 1'],
      [{ top_p: 0.5 }, 'top_p', '0.95'],
      [
        {
          tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
          tool_choice: 'required',
        },
        'tool_choice',
        'force a tool call',
      ],
      [{ max_tokens: 1024 }, 'max_tokens', 'above the thinking budget'],
      [{ reasoning_effort: 'xhigh' }, 'reasoning_effort', 'xhigh has none'],
      [{ reasoning_effort: 'max' }, 'reasoning_effort', 'max has none'],
    ]
    for (const [fields, param, says] of cases) {
      const refused = await client.chat.completions
        .create({
          model: 'm',
          ...ASK,
          reasoning_effort: 'low',
          ...fields,
        } as OpenAI.ChatCompletionCreateParamsNonStreaming)
        .catch((error: unknown) => error)
      expect(refused, param).toMatchObject({ status: 400, param })
      expect((refused as Error).message).toContain(says)
    }
    // Temperature 1 is Anthropic's default, and goes with thinking.
    const ok = await client.chat.completions.create({
      model: 'm',
      ...ASK,
      reasoning_effort: 'low',
      temperature: 1,
    })
    expect(ok.choices[0]?.message.content).toBeTruthy()
    expect(fake.requests).toHaveLength(1)
  })
})

/**
 * A level only some Claude models lack (`xhigh` before Opus 4.7 and Sonnet
 * 5, `max` and `xhigh` before 4.6) is refused by the model that lacks it,
 * when it is reached: with such a model only behind the first in the list,
 * the request was refused whole (400 before anything was sent) where the
 * first model takes it.
 */
describe('a reasoning_effort level a fallback lacks', () => {
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const close of closers.reverse()) await close()
    closers.length = 0
  })

  /**
   * A gateway whose model `m` is `first` on provider `a` (of `dialect`),
   * then `behind` on Anthropic provider `b`; `first` answers "Pick B.". The
   * answer to `request`, and what each fake was sent.
   */
  async function askPast(
    [dialect, first]: ['anthropic' | 'openai', string],
    behind: string,
    request: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>,
  ) {
    const a = await fakeProvider(dialect, ['key-a'])
    const b = await fakeProvider('anthropic', ['key-b'])
    closers.push(
      () => a.fake.close(),
      () => b.fake.close(),
    )
    const harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', first], ['b', behind]) },
    })
    closers.push(() => harness.close())
    a.fake.setReply(reply.text('Pick B.'))
    const answer = await harness.client.chat.completions.create({ model: 'm', ...ASK, ...request })
    return { text: answer.choices[0]?.message.content, first: a.fake, behind: b.fake }
  }

  for (const [effort, behind] of [
    ['xhigh', 'claude-sonnet-4-6'],
    ['max', 'claude-sonnet-4-5'],
  ] as const) {
    it(`${effort} with ${behind} behind claude-opus-4-7: the first model answers`, async () => {
      const sent = await askPast(['anthropic', 'claude-opus-4-7'], behind, {
        reasoning_effort: effort as 'high',
        max_tokens: 64000,
      })
      expect(sent.text).toBe('Pick B.')
      expect(sent.first.requests).toHaveLength(1)
      expect(sent.first.requests[0]?.body).toMatchObject({ output_config: { effort } })
      expect(sent.behind.requests).toHaveLength(0)
    })
  }

  const besideThinking: Array<[string, Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>]> = [
    ['claude-sonnet-4-6', { temperature: 0.5 }],
    [
      'claude-sonnet-4-5',
      {
        messages: [
          { role: 'user', content: 'A or B?' },
          { role: 'assistant', content: 'I pick' },
        ],
      },
    ],
  ]
  for (const [behind, extra] of besideThinking) {
    it(`so is it with what Anthropic refuses beside thinking (${Object.keys(extra)[0]}) to ${behind}, never sent it`, async () => {
      const sent = await askPast(['openai', 'my-model'], behind, {
        ...extra,
        reasoning_effort: 'xhigh' as 'high',
      })
      expect(sent.text).toBe('Pick B.')
      expect(sent.behind.requests).toHaveLength(0)
    })
  }
})
