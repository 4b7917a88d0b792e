import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { postAnthropicMessages } from '../support/fakeChat.js'

/**
 * What the Messages API refuses beside thinking, the fake answered 200: a
 * client (or llm's translation) that sent it passed against the fake and
 * met Anthropic's 400 against the API. Each is now that 400, in Anthropic's
 * error shape and words (docs.claude.com, "Extended thinking", "Thinking
 * with tool use"); what the API takes is still answered.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const TOOLS = [{ name: 'weather', input_schema: { type: 'object' } }]
const BUDGET = { type: 'enabled', budget_tokens: 1024 }
const ADAPTIVE = { type: 'adaptive' }
const loop = (assistant: unknown[]) => [
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: assistant },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18 °C' }] },
]
const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} }
const signed = { type: 'thinking', thinking: 'call it', signature: 'sig-1' }

interface Answer {
  type?: string
  error?: { message: string }
  content?: { type: string }[]
}

async function send(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  fake ??= await startFakeProvider({ dialect: 'anthropic', reply: reply.text('ok') })
  const res = await postAnthropicMessages(fake.baseURL, body, {
    // Sonnet 4.6 takes both forms; Sonnet 4.5 answers 400 to adaptive
    // thinking (anthropicThinkingTypeRefused.test.ts).
    model: 'claude-sonnet-4-6',
    maxTokens: 4096,
    headers,
  })
  return { status: res.status, json: (await res.json()) as Answer }
}

describe("the Anthropic fake answers Anthropic's 400s beside thinking", () => {
  it('refuses each, in its words and error shape', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ thinking: { type: 'enabled', budget_tokens: 512 } }, 'greater than or equal to 1024'],
      // Opus 4.7 and later and the Claude 5 models think adaptively only.
      ...['claude-opus-4-7', 'claude-opus-4-8', 'claude-sonnet-5'].map(
        (model): [Record<string, unknown>, string] => [
          { model, thinking: BUDGET },
          '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
        ],
      ),
      [{ thinking: BUDGET, max_tokens: 1024 }, '`max_tokens` must be greater than'],
      [{ thinking: ADAPTIVE, temperature: 0.5 }, '`temperature` may only be set to 1'],
      [{ thinking: BUDGET, top_p: 0.9 }, '`top_p` must be greater than or equal to 0.95'],
      [
        { thinking: BUDGET, tools: TOOLS, tool_choice: { type: 'any' } },
        'Thinking may not be enabled when tool_choice forces tool use.',
      ],
      [
        { thinking: BUDGET, tools: TOOLS, messages: loop([toolUse]) },
        'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`',
      ],
      [
        {
          thinking: ADAPTIVE,
          messages: [
            { role: 'user', content: 'JSON please' },
            { role: 'assistant', content: '{' },
          ],
        },
        'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`',
      ],
    ]
    for (const [body, says] of cases) {
      const { status, json } = await send(body)
      expect(status, says).toBe(400)
      expect(json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } })
      expect(json.error?.message).toContain(says)
    }
    expect(fake?.requests.every((r) => r.outcome === 'error')).toBe(true)
  })

  it('answers what the API takes: the same fields without thinking, a signed turn, adaptive with a forced tool', async () => {
    const bodies: Record<string, unknown>[] = [
      // One at a time: Sonnet 4.6 takes no temperature beside a top_p at all
      // ("cannot both be specified for this model", anthropicSamplingRefused).
      { temperature: 0.5 },
      { top_p: 0.9 },
      { messages: loop([toolUse]), tools: TOOLS },
      { thinking: { type: 'disabled' }, messages: loop([toolUse]), tools: TOOLS },
      { thinking: BUDGET, temperature: 1 },
      { thinking: BUDGET, top_p: 0.95 },
      { thinking: BUDGET, tools: TOOLS, messages: loop([signed, toolUse]) },
      {
        thinking: BUDGET,
        tools: TOOLS,
        messages: [
          ...loop([signed, toolUse]),
          { role: 'assistant', content: [{ ...toolUse, id: 'toolu_2' }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: '' }] },
        ],
      },
      { thinking: ADAPTIVE, tools: TOOLS, tool_choice: { type: 'tool', name: 'weather' } },
    ]
    for (const body of bodies) {
      const { status, json } = await send(body)
      expect(status, JSON.stringify(body)).toBe(200)
      expect(json.type).toBe('message')
    }
  })

  it('skips the thinking under adaptive thinking with a forced tool call', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('', {
        thinking: 'call it',
        signature: 'sig-1',
        toolCalls: [{ name: 'weather', arguments: {} }],
      }),
    })
    const forced = await send({
      thinking: ADAPTIVE,
      tools: TOOLS,
      tool_choice: { type: 'any' },
    })
    expect(forced.json.content?.map((b) => b.type)).toEqual(['tool_use'])
    const free = await send({ thinking: ADAPTIVE, tools: TOOLS })
    expect(free.json.content?.map((b) => b.type)).toEqual(['thinking', 'tool_use'])
  })

  it('continues the tool loop it answered unthought under adaptive thinking and a forced tool', async () => {
    // The call came as [tool_use], no thinking; sent back with its result
    // (as the docs say), the fake answered 400 "must start with a thinking
    // block": the loop it started could not go on. Only a budget needs one.
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('', {
        thinking: 'call it',
        signature: 'sig-1',
        toolCalls: [{ id: 'toolu_1', name: 'weather', arguments: {} }],
      }),
    })
    const forced = await send({ thinking: ADAPTIVE, tools: TOOLS, tool_choice: { type: 'any' } })
    expect(forced.status).toBe(200)
    fake.setReply(reply.text('It rains.'))
    const next = await send({
      thinking: ADAPTIVE,
      tools: TOOLS,
      messages: loop(forced.json.content as unknown[]),
    })
    expect(next.status, next.json.error?.message).toBe(200)
    expect(next.json.content?.map((b) => b.type)).toEqual(['text'])
    // Beside a budget the turn still needs its thinking.
    const budget = await send({ thinking: BUDGET, tools: TOOLS, messages: loop([toolUse]) })
    expect(budget.status).toBe(400)
  })

  it('takes a budget above max_tokens with the interleaved-thinking beta beside tools', async () => {
    // docs.claude.com, "Interleaved thinking": the budget is the whole
    // turn's and may exceed max_tokens. The fake answered 400 all the same.
    const big = { thinking: { type: 'enabled', budget_tokens: 8192 }, max_tokens: 4096 }
    const beta = { 'anthropic-beta': 'interleaved-thinking-2025-05-14' }
    expect((await send({ ...big, tools: TOOLS }, beta)).status).toBe(200)
    const listed = {
      'anthropic-beta': 'token-efficient-tools-2025-02-19, interleaved-thinking-2025-05-14',
    }
    expect((await send({ ...big, tools: TOOLS }, listed)).status).toBe(200)
    // Without the beta, or without tools, the budget must stay below max_tokens.
    for (const [body, headers] of [
      [{ ...big, tools: TOOLS }, {}],
      [big, beta],
    ] as const) {
      const refused = await send(body, headers)
      expect(refused.status).toBe(400)
      expect(refused.json.error?.message).toContain('`max_tokens` must be greater than')
    }
  })

  it('refuses a forced tool call on the models whose thinking is always on (Opus 5.5, Fable 5.1, …)', async () => {
    // docs.claude.com, "What's new in Claude Opus 5.5": a forced tool_choice
    // is a 400 there, with adaptive thinking or with `thinking` left out
    // (these models think all the same). The fake answered the call.
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('', { toolCalls: [{ id: 'toolu_1', name: 'weather', arguments: {} }] }),
    })
    const models = ['claude-opus-5-5', 'claude-sonnet-5-5', 'claude-fable-5-1', 'claude-mythos-5-1']
    for (const model of [...models, 'claude-opus-6']) {
      for (const tool_choice of [{ type: 'any' }, { type: 'tool', name: 'weather' }]) {
        for (const thinking of [{ thinking: ADAPTIVE }, {}]) {
          const { status, json } = await send({ model, tools: TOOLS, tool_choice, ...thinking })
          expect(status, `${model} ${tool_choice.type}`).toBe(400)
          expect(json.error?.message).toBe(
            'Thinking may not be enabled when tool_choice forces tool use.',
          )
        }
      }
      const free = await send({
        model,
        thinking: ADAPTIVE,
        tools: TOOLS,
        tool_choice: { type: 'auto' },
      })
      expect(free.status).toBe(200)
    }
    // Opus 5, Fable 5 and Haiku take one.
    for (const model of ['claude-opus-5', 'claude-fable-5', 'claude-haiku-5-5']) {
      const taken = await send({
        model,
        thinking: ADAPTIVE,
        tools: TOOLS,
        tool_choice: { type: 'any' },
      })
      expect(taken.status, model).toBe(200)
    }
  })

  it('refuses thinking turned off where it cannot be: the always-thinking models, Opus 5 above high effort', async () => {
    // Sonnet 5.5 migration guide, "What's new in Claude Opus 5.5", the Fable
    // 5 and Mythos 5 migration guide: `{type: "disabled"}` is a 400 there.
    // The fake took it and answered unthought.
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('ok', { thinking: 'hmm', signature: 'sig-1' }),
    })
    const off = { thinking: { type: 'disabled' } }
    // Sonnet 5.5's 400 names between_tools (anthropicThinkingTypeRefused.test.ts).
    for (const model of [
      'claude-opus-5-5',
      'claude-fable-5',
      'claude-fable-5-1',
      'claude-mythos-5',
      'claude-opus-6',
    ]) {
      const { status, json } = await send({ model, ...off })
      expect(status, model).toBe(400)
      expect(json.error?.message).toBe(
        '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
      )
    }
    // Opus 5 stops thinking at effort high or below, not above.
    for (const effort of ['xhigh', 'max']) {
      const { status, json } = await send({
        model: 'claude-opus-5',
        ...off,
        output_config: { effort },
      })
      expect(status, effort).toBe(400)
      expect(json.error?.message).toBe(
        `output_config.effort '${effort}' is not supported when thinking is disabled on this model. Use effort 'high' or below, or enable thinking.`,
      )
    }
    expect(fake.paidGenerations).toBe(0)
    // Opus 5 at high or below, Sonnet 5, Opus 4.8 at any effort: answered,
    // unthought.
    for (const [model, effort] of [
      ['claude-opus-5', 'high'],
      ['claude-opus-5', undefined],
      ['claude-sonnet-5', 'max'],
      ['claude-opus-4-8', 'xhigh'],
    ] as const) {
      const body = { model, ...off, ...(effort ? { output_config: { effort } } : {}) }
      const { status, json } = await send(body)
      expect(status, `${model} ${effort}`).toBe(200)
      expect(json.content?.map((b) => b.type)).toEqual(['text'])
    }
  })

  // platform.claude.com, "Effort": `max` from Claude 4.6 on, `xhigh` from
  // Opus 4.7 on, no effort at all before Opus 4.5 nor on Sonnet and Haiku
  // 4.5. The fake took every level from every model.
  it('refuses an effort level the model does not take, with thinking or without', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('ok') })
    const refused = [
      ['claude-opus-4-5', 'max', "output_config.effort 'max' is not supported for this model."],
      ['claude-opus-4-5', 'xhigh', "output_config.effort 'xhigh' is not supported for this model."],
      ['claude-opus-4-6', 'xhigh', "output_config.effort 'xhigh' is not supported for this model."],
      [
        'claude-sonnet-4-6',
        'xhigh',
        "output_config.effort 'xhigh' is not supported for this model.",
      ],
      ['claude-sonnet-4-5', 'high', 'This model does not support the effort parameter.'],
      ['claude-haiku-4-5', 'low', 'This model does not support the effort parameter.'],
      [
        'claude-opus-4-7',
        'extreme',
        "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'",
      ],
    ] as const
    for (const [model, effort, message] of refused) {
      for (const thinking of [undefined, ADAPTIVE]) {
        const body = { model, output_config: { effort }, ...(thinking ? { thinking } : {}) }
        // Adaptive thinking on the 4.5 models is its own 400 first.
        if (thinking && model.endsWith('4-5')) continue
        const { status, json } = await send(body)
        expect(status, `${model} ${effort}`).toBe(400)
        expect(json.error?.message).toBe(message)
      }
    }
    expect(fake.paidGenerations).toBe(0)
    for (const [model, effort] of [
      ['claude-opus-4-5', 'high'],
      ['claude-opus-4-6', 'max'],
      ['claude-sonnet-4-6', 'max'],
      ['claude-opus-4-7', 'xhigh'],
      ['claude-opus-4-7', 'max'],
      ['claude-sonnet-5', 'xhigh'],
      ['claude-mythos-preview', 'max'],
    ] as const) {
      const { status } = await send({ model, output_config: { effort } })
      expect(status, `${model} ${effort}`).toBe(200)
    }
  })

  // A message that is no object (`null`, a number) made the thinking check
  // throw: the client's bad body was the fake's own 500 `reply_failed`
  // ("TypeError: Cannot read properties of null"), read as the fake broken.
  it('reads a message that is no object as no turn, not as its own failure (500)', async () => {
    for (const odd of [null, 7, 'hi']) {
      const answer = await send({
        thinking: BUDGET,
        tools: TOOLS,
        messages: [odd, ...loop([signed, toolUse]).slice(1)],
      })
      expect(answer.status, String(odd)).toBe(200)
    }
    expect(fake!.requests.map((r) => r.failure)).toEqual([undefined, undefined, undefined])
  })
})

describe("the Anthropic fake answers Anthropic's 400s to JSON outputs (output_config.format) it does not take", () => {
  const schema = {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  }
  const format = { type: 'json_schema', schema }
  const prefill = [
    { role: 'user', content: 'JSON please' },
    { role: 'assistant', content: '{' },
  ]

  it('refuses a malformed format, a model without structured outputs and a prefill; takes the rest, effort beside', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ output_config: { format: 'json' } }, 'output_config.format: Input should be a valid'],
      [{ output_config: { format: { schema } } }, 'output_config.format.type: Field required'],
      [
        { output_config: { format: { type: 'json_object' } } },
        "output_config.format.type: Input should be 'json_schema'",
      ],
      [
        { output_config: { format: { type: 'json_schema' } } },
        'output_config.format.schema: Field required',
      ],
      [
        { output_config: { format: { type: 'json_schema', schema: '{}' } } },
        'output_config.format.schema: Input should be a valid',
      ],
      // OpenAI's response_format.json_schema fields are not Anthropic's.
      [
        { output_config: { format: { ...format, name: 'weather', strict: true } } },
        'output_config.format.name: Extra inputs are not permitted',
      ],
      // What JSON outputs refuse of JSON Schema.
      [
        {
          output_config: {
            format: {
              type: 'json_schema',
              schema: { ...schema, properties: { n: { type: 'integer', minimum: 1 } } },
            },
          },
        },
        'output_config.format.schema.properties.n.minimum: ',
      ],
      [
        {
          output_config: {
            format: { type: 'json_schema', schema: { ...schema, additionalProperties: true } },
          },
        },
        'output_config.format.schema.additionalProperties: ',
      ],
      // Opus 4.1 had them in beta only (`output_format` behind a beta header).
      ...['claude-3-5-haiku-20241022', 'claude-sonnet-4-20250514', 'claude-opus-4-1'].map(
        (model): [Record<string, unknown>, string] => [
          { model, output_config: { format } },
          `'${model}' does not support structured outputs.`,
        ],
      ),
      [{ model: 'claude-sonnet-4-5', output_config: { format }, messages: prefill }, 'prefill'],
    ]
    for (const [body, says] of cases) {
      const { status, json } = await send(body)
      expect(status, says).toBe(400)
      expect(json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } })
      expect(json.error?.message).toContain(says)
    }
    for (const body of [
      { output_config: { format, effort: 'high' }, thinking: ADAPTIVE },
      { model: 'claude-opus-4-5', output_config: { format } },
      {
        output_config: {
          format: {
            type: 'json_schema',
            schema: {
              ...schema,
              additionalProperties: false,
              properties: { tags: { type: 'array', items: { type: 'string' }, minItems: 1 } },
            },
          },
        },
      },
      { model: 'claude-haiku-4-5', output_config: { format: null } },
      { model: 'claude-sonnet-4-5', messages: prefill },
    ]) {
      const { status, json } = await send(body)
      expect(status, JSON.stringify(body)).toBe(200)
      expect(json.type).toBe('message')
    }
  })

  it('refuses what JSON outputs do not take of JSON Schema: recursion through $ref, oneOf, not, prefixItems, an unlisted string format, a constraint under additionalProperties, an object left open', async () => {
    const at = (path: string) => `output_config.format.schema${path}: `
    const node = {
      type: 'object',
      properties: { children: { type: 'array', items: { $ref: '#/definitions/Node' } } },
      additionalProperties: false,
    }
    const cases: [object, string][] = [
      // zod's recursive schemas, as zod-to-json-schema writes them (definitions) and as zod 4 does ($defs, "#").
      [
        { $ref: '#/definitions/Node', definitions: { Node: node } },
        at('.definitions.Node.properties.children.items.$ref'),
      ],
      [
        {
          ...schema,
          properties: { next: { $ref: '#/$defs/List' } },
          $defs: { List: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/List' }] } },
        },
        at('.$defs.List.anyOf.1.$ref'),
      ],
      [{ ...schema, properties: { parent: { $ref: '#' } } }, at('.properties.parent.$ref')],
      [
        { ...schema, properties: { city: { oneOf: [{ type: 'string' }, { type: 'null' }] } } },
        at('.properties.city.oneOf'),
      ],
      [
        { ...schema, properties: { city: { type: 'string', not: { const: '' } } } },
        at('.properties.city.not'),
      ],
      [
        { ...schema, properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }] } } },
        at('.properties.pair.prefixItems'),
      ],
      [
        { ...schema, properties: { at: { type: 'string', format: 'ipv5' } } },
        at('.properties.at.format'),
      ],
      [
        { ...schema, additionalProperties: { type: 'integer', minimum: 1 } },
        at('.additionalProperties'),
      ],
    ]
    for (const [s, says] of cases) {
      const { status, json } = await send({
        output_config: { format: { type: 'json_schema', schema: s } },
      })
      expect(status, says).toBe(400)
      expect(json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } })
      expect(json.error?.message).toContain(says)
    }
    // An object that leaves additionalProperties out, at any depth (OpenAI's strict: false schemas, pydantic's): in the API's words.
    const open = { type: 'object', properties: { x: { type: 'number' } } }
    for (const s of [
      open,
      { ...schema, properties: { points: { type: 'array', items: open } } },
      { ...schema, properties: { p: { $ref: '#/$defs/P' } }, $defs: { P: open } },
      { ...schema, properties: { p: { anyOf: [{ type: ['object', 'null'] }] } } },
    ]) {
      const { status, json } = await send({
        output_config: { format: { type: 'json_schema', schema: s } },
      })
      expect(status, JSON.stringify(s)).toBe(400)
      expect(json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } })
      expect(json.error?.message).toBe(
        "output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false",
      )
    }
    // A $ref that is no cycle (one definition used twice), a listed format: taken.
    const point = {
      type: 'object',
      properties: { x: { type: 'number' } },
      additionalProperties: false,
    }
    for (const s of [
      {
        ...schema,
        properties: { a: { $ref: '#/$defs/P' }, b: { $ref: '#/$defs/P' } },
        $defs: { P: point },
      },
      { ...schema, properties: { at: { type: 'string', format: 'date-time' } } },
    ]) {
      const { status } = await send({
        output_config: { format: { type: 'json_schema', schema: s } },
      })
      expect(status, JSON.stringify(s)).toBe(200)
    }
  })
})
