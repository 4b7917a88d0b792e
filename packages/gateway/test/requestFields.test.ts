import { readFileSync } from 'node:fs'
import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KNOWN_FIELDS } from '../src/http/chatRequestSchema.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * Walks the README's field tables: for every row and dialect, one request
 * through the real gateway to that dialect's fake provider, asserting what
 * the fake received, or the 400 and that nothing was sent.
 */

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

function tableRows(marker: string): string[][] {
  const start = README.indexOf(`<!-- ${marker}`)
  const end = README.indexOf(`<!-- /${marker} -->`)
  if (start < 0 || end < 0) throw new Error(`README has no ${marker} table`)
  return README.slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2) // header and separator
    .map((line) =>
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    )
}

const COLUMNS: ProviderDialect[][] = [
  ['openai'],
  ['deepseek', 'qwen', 'ernie', 'doubao'],
  ['anthropic'],
  ['gemini'],
]
const DIALECTS = COLUMNS.flat()

interface Sample {
  /** The request's other fields (a tool for `tool_choice`, `stream` for `stream_options`). */
  with?: Record<string, unknown>
  /** Other fields for one dialect only (Gemini's `top_logprobs` goes beside `logprobs: true`). */
  withFor?: Partial<Record<ProviderDialect, Record<string, unknown>>>
  value: unknown
  /** Another value for a dialect whose cell names its own refusal (DeepSeek's `json_schema`). */
  valueFor?: Partial<Record<ProviderDialect, unknown>>
  /** What a translating dialect must hold at the cell's first path. */
  translated?: Partial<Record<ProviderDialect, unknown>>
}

const TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
}
const SCHEMA = {
  type: 'object',
  properties: { a: { type: ['string', 'null'] } },
  required: ['a'],
  additionalProperties: false,
}

/** One sample value per table row (the row's first cell). */
const SAMPLES: Record<string, Sample> = {
  model: { value: undefined },
  messages: {
    value: [
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    ],
  },
  max_completion_tokens: {
    value: 77,
    translated: Object.fromEntries(DIALECTS.map((d) => [d, 77])),
  },
  max_tokens: { value: 77, translated: Object.fromEntries(DIALECTS.map((d) => [d, 77])) },
  temperature: { value: 0.5, translated: { gemini: 0.5 } },
  top_p: { value: 0.5, translated: { gemini: 0.5 } },
  stop: { value: ['END'], translated: { anthropic: ['END'], gemini: ['END'] } },
  stream: { value: true },
  stream_options: { value: { include_usage: true }, with: { stream: true } },
  'stream_options.include_obfuscation': { value: true, with: { stream: true } },
  tools: { value: [TOOL] },
  tool_choice: {
    value: 'required',
    with: { tools: [TOOL] },
    translated: { anthropic: { type: 'any' }, gemini: { functionCallingConfig: { mode: 'ANY' } } },
  },
  parallel_tool_calls: {
    value: false,
    with: { tools: [TOOL] },
    translated: { anthropic: { type: 'auto', disable_parallel_tool_use: true } },
  },
  response_format: {
    value: { type: 'json_schema', json_schema: { name: 'answer', schema: SCHEMA, strict: true } },
    valueFor: { deepseek: { type: 'json_object' } },
    translated: { gemini: 'application/json' },
  },
  seed: { value: 42, translated: { gemini: 42 } },
  n: { value: 1 },
  frequency_penalty: { value: 0.5, translated: { gemini: 0.5 } },
  presence_penalty: { value: -0.5, translated: { gemini: -0.5 } },
  logit_bias: { value: { '50256': -100 } },
  logprobs: { value: true, translated: { gemini: true } },
  top_logprobs: { value: 2, withFor: { gemini: { logprobs: true } }, translated: { gemini: 2 } },
  user: { value: 'user-1', translated: { anthropic: 'user-1' } },
  safety_identifier: { value: 'user-1', translated: { anthropic: 'user-1' } },
  prompt_cache_key: { value: 'cache-1' },
  prompt_cache_retention: { value: '24h' },
  service_tier: { value: 'flex' },
  store: { value: true },
  metadata: { value: { team: 'search' } },
  modalities: { value: ['text'] },
  prediction: { value: { type: 'content', content: 'draft' } },
  reasoning_effort: {
    value: 'low',
    translated: { anthropic: { type: 'enabled', budget_tokens: 1024 } },
  },
  verbosity: { value: 'low' },
  web_search_options: { value: { search_context_size: 'low' } },
  'any other field': { value: false },
}

/** The wire name a row stands for. */
const fieldOf = (label: string) => (label === 'any other field' ? 'enable_thinking' : label)

function at(body: unknown, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], body)
}

/** Sets `value` at a dotted path (`stream_options.include_obfuscation`), making objects on the way. */
function put(body: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.')
  let target = body
  for (const key of keys.slice(0, -1)) {
    target[key] ??= {}
    target = target[key] as Record<string, unknown>
  }
  target[keys.at(-1) as string] = value
}

/** A tool-call history: the assistant's calls (arguments as given) and their results. */
function toolHistory(...args: string[]) {
  const calls = args.map((text, i) => ({
    id: `call_${i}`,
    type: 'function',
    function: { name: 'get_weather', arguments: text },
  }))
  return [
    { role: 'user', content: 'weather?' },
    { role: 'assistant', content: null, tool_calls: calls },
    ...calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: 'sunny' })),
  ]
}

describe('every Chat Completions field is forwarded, translated or refused (README field table)', () => {
  const fakes = new Map<ProviderDialect, FakeProvider>()
  let harness: Harness

  beforeAll(async () => {
    const providers: Record<string, unknown> = {}
    const models: Record<string, unknown> = {}
    for (const dialect of DIALECTS) {
      const { fake, entry } = await fakeProvider(dialect, [`key-${dialect}`])
      fakes.set(dialect, fake)
      providers[`p-${dialect}`] = entry
      models[`m-${dialect}`] = fallback([`p-${dialect}`, `up-${dialect}`])
    }
    harness = await startHarness({ providers, models })
  })
  afterAll(async () => {
    await harness?.close()
    await Promise.all([...fakes.values()].map((f) => f.close()))
  })

  async function send(dialect: ProviderDialect, fields: Record<string, unknown>) {
    const fake = fakes.get(dialect) as FakeProvider
    const before = fake.requests.length
    const response = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: `m-${dialect}`,
        messages: [{ role: 'user', content: 'hi' }],
        ...fields,
      }),
    })
    const text = await response.text()
    const sent = fake.requests.slice(before)
    return { status: response.status, text, sent, upstream: sent[0]?.body }
  }

  const rows = tableRows('field-table')

  it('the table has a row for every field the schema knows, and a sample for every row', () => {
    const labels = rows.map((row) => (row[0] as string).replaceAll('`', ''))
    const refused = tableRows('gateway-refusals').map((row) =>
      (row[0] as string).replaceAll('`', ''),
    )
    for (const field of KNOWN_FIELDS) expect([...labels, ...refused]).toContain(field)
    expect(labels.toSorted()).toEqual(Object.keys(SAMPLES).toSorted())
    for (const row of rows) expect(row).toHaveLength(1 + COLUMNS.length)
  })

  for (const row of rows) {
    const label = (row[0] as string).replaceAll('`', '')
    const field = fieldOf(label)
    COLUMNS.forEach((dialects, column) => {
      const cell = row[column + 1] as string
      for (const dialect of dialects) {
        it(`${label} → ${dialect}: ${cell}`, async () => {
          const sample = SAMPLES[label] as Sample
          const value = sample.valueFor?.[dialect] ?? sample.value
          const fields = structuredClone({ ...sample.with, ...sample.withFor?.[dialect] })
          if (value !== undefined) put(fields, field, value)
          const { status, text, sent, upstream } = await send(dialect, fields)
          if (cell.startsWith('refused')) {
            expect(status, text).toBe(400)
            const { error } = JSON.parse(text)
            expect(error.code).toBe('unsupported_field')
            expect(error.param).toBe(field)
            expect(error.message).toContain(field)
            expect(error.message).toContain(`"p-${dialect}"`)
            expect(sent).toHaveLength(0)
            return
          }
          expect(status, text).toBe(200)
          expect(sent).toHaveLength(1)
          if (cell.startsWith('forwarded')) {
            expect(at(upstream, field)).toEqual(value)
          } else if (cell.startsWith('translated to')) {
            const paths = [...(cell.split('(')[0] as string).matchAll(/`([^`]+)`/g)]
              .map((m) => m[1] as string)
              .filter((p) => /^[a-zA-Z_.]+$/.test(p))
            expect(paths.length).toBeGreaterThan(0)
            for (const path of paths) expect(at(upstream, path), path).toBeDefined()
            if (sample.translated?.[dialect] !== undefined) {
              expect(at(upstream, paths[0] as string)).toEqual(sample.translated[dialect])
            }
            if (!paths.includes(field)) expect(at(upstream, field)).toBeUndefined()
          } else if (cell.startsWith('the default')) {
            expect(at(upstream, field)).toBeUndefined()
          } else {
            expect(cell).toMatch(/^gateway/)
            if (field === 'stream' || field === 'stream_options') {
              expect(sent[0]?.stream).toBe(true)
              expect(text).toContain('data: ')
            }
            if (field === 'stream_options') expect(text).toContain('"usage"')
          }
        })
      }
    })
  }

  it('a strict tool is forwarded to OpenAI-compatible dialects and refused, naming the provider, by Anthropic and Gemini', async () => {
    const strictTool = { ...TOOL, function: { ...TOOL.function, strict: true } }
    for (const dialect of ['openai', 'qwen', 'deepseek'] as const) {
      const { status, text, upstream } = await send(dialect, { tools: [strictTool] })
      expect(status, text).toBe(200)
      expect(at(upstream, 'tools')).toEqual([strictTool])
    }
    for (const dialect of ['anthropic', 'gemini'] as const) {
      const { status, text, sent } = await send(dialect, { tools: [TOOL, strictTool] })
      expect(status, text).toBe(400)
      const { error } = JSON.parse(text)
      expect(error).toMatchObject({ code: 'unsupported_field', param: 'tools[1].function.strict' })
      expect(error.message).toContain(`"p-${dialect}"`)
      expect(sent).toHaveLength(0)
      // strict: false asks for nothing: it goes, without the field.
      const relaxed = { ...TOOL, function: { ...TOOL.function, strict: false } }
      const ok = await send(dialect, { tools: [relaxed] })
      expect(ok.status, ok.text).toBe(200)
      expect(JSON.stringify(ok.upstream)).not.toContain('strict')
    }
  })

  it('a strict tool without parameters (an empty parameter list) goes with the empty schema strict mode accepts', async () => {
    // OpenAI answers `{type: "object", properties: {}}` under `strict: true`
    // with 400 "Invalid schema for function 'now': In context=(),
    // 'additionalProperties' is required to be supplied and to be false":
    // a schema the client never wrote.
    const noArguments = { type: 'function', function: { name: 'now', strict: true } }
    for (const dialect of ['openai', 'qwen'] as const) {
      const { status, text, upstream } = await send(dialect, { tools: [noArguments] })
      expect(status, text).toBe(200)
      expect(at(upstream, 'tools')).toEqual([
        {
          type: 'function',
          function: {
            name: 'now',
            parameters: { type: 'object', properties: {}, additionalProperties: false },
            strict: true,
          },
        },
      ])
    }
    // Without strict mode, the empty parameter list goes as before.
    const relaxed = await send('openai', {
      tools: [{ type: 'function', function: { name: 'now' } }],
    })
    expect(at(relaxed.upstream, 'tools')).toEqual([
      {
        type: 'function',
        function: { name: 'now', parameters: { type: 'object', properties: {} } },
      },
    ])
  })

  /** Expects a 400 `unsupported_field` at `param`, naming the provider, with nothing sent. */
  function expectRefused(
    dialect: ProviderDialect,
    result: Awaited<ReturnType<typeof send>>,
    param: string,
  ) {
    expect(result.status, result.text).toBe(400)
    const { error } = JSON.parse(result.text)
    expect(error).toMatchObject({ code: 'unsupported_field', param })
    expect(error.message.startsWith(`${param}: `)).toBe(true)
    expect(error.message).toContain(`"p-${dialect}"`)
    expect(result.sent).toHaveLength(0)
  }

  it('max_tokens beside a different max_completion_tokens is refused, nothing sent; the same value is one cap', async () => {
    for (const dialect of ['openai', 'qwen', 'anthropic', 'gemini'] as const) {
      const both = await send(dialect, { max_tokens: 10, max_completion_tokens: 20 })
      expect(both.status, both.text).toBe(400)
      expect(JSON.parse(both.text).error).toMatchObject({
        code: 'invalid_request',
        param: 'max_tokens',
      })
      expect(both.sent).toHaveLength(0)
      const same = await send(dialect, { max_tokens: 10, max_completion_tokens: 10 })
      expect(same.status, same.text).toBe(200)
    }
  })

  it('a stop sequence that is empty or only whitespace is refused for Anthropic (its 400), forwarded to OpenAI', async () => {
    expectRefused('anthropic', await send('anthropic', { stop: '\n' }), 'stop')
    expectRefused('anthropic', await send('anthropic', { stop: ['END', ' \t'] }), 'stop[1]')
    expectRefused('anthropic', await send('anthropic', { stop: ['END', ''] }), 'stop[1]')
    const kept = await send('anthropic', { stop: ['\nEND', ' x '] })
    expect(kept.status, kept.text).toBe(200)
    expect(at(kept.upstream, 'stop_sequences')).toEqual(['\nEND', ' x '])
    const openai = await send('openai', { stop: '\n' })
    expect(openai.status, openai.text).toBe(200)
    expect(at(openai.upstream, 'stop')).toEqual(['\n'])
  })

  it('half an emoji (a lone surrogate) is refused for Anthropic and DeepSeek advising the whole character, not removing the field', async () => {
    const half = { messages: [{ role: 'user', content: 'a\ud83d' }] }
    for (const dialect of ['anthropic', 'deepseek'] as const) {
      const result = await send(dialect, half)
      expectRefused(dialect, result, 'messages[0].content')
      const { message } = JSON.parse(result.text).error
      expect(message).toMatch(
        /; send the whole character \(both halves of the surrogate pair\) or route the model elsewhere$/,
      )
      expect(message).not.toContain('remove the field')
    }
  })

  it('tool-call arguments reach OpenAI-compatible providers byte for byte, whatever they hold', async () => {
    const texts = [
      '{"id": 12345678901234567890}',
      '"just a string"',
      'null',
      '{"a":1.10, "b" : [ 1e2 ]}',
      '',
      'not json {',
      '{"city":"北京","emoji":"\\ud83d\\ude00"}',
    ]
    for (const dialect of ['openai', 'qwen', 'deepseek'] as const) {
      const { status, text, upstream, sent } = await send(dialect, {
        messages: toolHistory(...texts),
      })
      expect(status, text).toBe(200)
      const calls = at(upstream, 'messages.1.tool_calls') as { function: { arguments: string } }[]
      expect(calls.map((c) => c.function.arguments)).toEqual(texts)
      // On the wire too: each text, JSON-encoded as the client encoded it.
      for (const t of texts) expect(sent[0]?.rawBody).toContain(JSON.stringify(t))
    }
  })

  it('tool-call arguments go to Anthropic and Gemini as the JSON object they hold (empty as {}); any other value is refused, naming the call', async () => {
    const inputOf = (dialect: ProviderDialect, upstream: unknown, i: number) =>
      dialect === 'anthropic'
        ? at(upstream, `messages.1.content.${i}.input`)
        : at(upstream, `contents.1.parts.${i}.functionCall.args`)
    for (const dialect of ['anthropic', 'gemini'] as const) {
      const ok = await send(dialect, {
        messages: toolHistory('{"city": "Paris", "days": [1, 2]}', '', '  '),
      })
      expect(ok.status, ok.text).toBe(200)
      expect(inputOf(dialect, ok.upstream, 0)).toEqual({ city: 'Paris', days: [1, 2] })
      expect(inputOf(dialect, ok.upstream, 1)).toEqual({})
      expect(inputOf(dialect, ok.upstream, 2)).toEqual({})
      for (const bad of [
        'null',
        '"just a string"',
        '[1, 2]',
        '42',
        'true',
        'not json {',
        '{"id": 12345678901234567890}',
        '{"deep": [{"id": -9007199254740993}]}',
      ]) {
        // The bad call second, so the param names which call.
        const refused = await send(dialect, { messages: toolHistory('{}', bad) })
        expectRefused(dialect, refused, 'messages[1].tool_calls[1].function.arguments')
      }
    }
  })

  it('a message name is forwarded to OpenAI-compatible providers and refused, naming the message, by Anthropic and Gemini', async () => {
    const messages = [
      { role: 'system', content: 'Be brief.', name: 'rules' },
      { role: 'developer', content: 'Answer in French.', name: 'dev' },
      { role: 'user', content: 'hi', name: 'alice' },
      { role: 'assistant', content: 'hello', name: 'bot' },
      { role: 'user', content: 'and you?' },
    ]
    for (const dialect of ['openai', 'qwen', 'ernie'] as const) {
      const { status, text, upstream } = await send(dialect, { messages })
      expect(status, text).toBe(200)
      const sent = at(upstream, 'messages') as { role: string; name?: string }[]
      expect(sent.map((m) => [m.role, m.name])).toEqual([
        ['system', 'rules'],
        ['system', 'dev'],
        ['user', 'alice'],
        ['assistant', 'bot'],
        ['user', undefined],
      ])
    }
    for (const dialect of ['anthropic', 'gemini'] as const) {
      for (const i of [0, 2, 3]) {
        const one = messages.map((m, j) => (j === i ? m : { role: m.role, content: m.content }))
        expectRefused(dialect, await send(dialect, { messages: one }), `messages[${i}].name`)
      }
      // null is "not set".
      const unnamed = await send(dialect, {
        messages: [{ role: 'user', content: 'hi', name: null }],
      })
      expect(unnamed.status, unnamed.text).toBe(200)
    }
  })

  it('Gemini takes top_logprobs beside logprobs: true only (OpenAI answers 400 without it), naming it, nothing sent; 0 asks for no alternatives', async () => {
    for (const fields of [{ top_logprobs: 2 }, { logprobs: false, top_logprobs: 2 }]) {
      expectRefused('gemini', await send('gemini', fields), 'top_logprobs')
    }
    const none = await send('gemini', { logprobs: true, top_logprobs: 0 })
    expect(none.status, none.text).toBe(200)
    expect(at(none.upstream, 'generationConfig.responseLogprobs')).toBe(true)
    expect(at(none.upstream, 'generationConfig.logprobs')).toBeUndefined()
  })

  it('Anthropic gets user and safety_identifier as one metadata.user_id when they agree, and refuses two different ids', async () => {
    const same = await send('anthropic', { user: 'u-1', safety_identifier: 'u-1' })
    expect(same.status, same.text).toBe(200)
    expect(at(same.upstream, 'metadata')).toEqual({ user_id: 'u-1' })
    for (const order of [
      { user: 'u-1', safety_identifier: 's-2' },
      { safety_identifier: 's-2', user: 'u-1' },
    ]) {
      expectRefused('anthropic', await send('anthropic', order), 'user')
    }
    const openai = await send('openai', { user: 'u-1', safety_identifier: 's-2' })
    expect(openai.status, openai.text).toBe(200)
    expect(at(openai.upstream, 'user')).toBe('u-1')
    expect(at(openai.upstream, 'safety_identifier')).toBe('s-2')
  })

  it('Anthropic refuses an end-user id its metadata.user_id answers 400 (an email address, more than 256 characters), naming the field, nothing sent; OpenAI gets it', async () => {
    const email = { user: 'alice@example.com' }
    expectRefused('anthropic', await send('anthropic', email), 'user')
    const long = { safety_identifier: 'x'.repeat(257) }
    expectRefused('anthropic', await send('anthropic', long), 'safety_identifier')
    const openai = await send('openai', email)
    expect(openai.status, openai.text).toBe(200)
    expect(at(openai.upstream, 'user')).toBe('alice@example.com')
  })

  it('a tool_choice object with any key beyond type and function.name is refused by Anthropic and Gemini, naming the key, and forwarded as sent to OpenAI', async () => {
    const choice = (extra: Record<string, unknown>, fnExtra: Record<string, unknown> = {}) => ({
      tools: [TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather', ...fnExtra }, ...extra },
    })
    for (const dialect of ['anthropic', 'gemini'] as const) {
      expectRefused(dialect, await send(dialect, choice({ extra: 1 })), 'tool_choice.extra')
      expectRefused(
        dialect,
        await send(dialect, choice({}, { strict: true })),
        'tool_choice.function.strict',
      )
      const plain = await send(dialect, choice({}))
      expect(plain.status, plain.text).toBe(200)
    }
    const openai = await send('openai', choice({ extra: 1 }))
    expect(openai.status, openai.text).toBe(200)
    expect(at(openai.upstream, 'tool_choice')).toEqual(choice({ extra: 1 }).tool_choice)
  })

  it('json_schema.description goes to Gemini as the schema’s own description; refused without a schema or beside another', async () => {
    const format = (json_schema: Record<string, unknown>) => ({
      response_format: { type: 'json_schema', json_schema: { name: 'answer', ...json_schema } },
    })
    const described = await send('gemini', format({ description: 'The answer', schema: SCHEMA }))
    expect(described.status, described.text).toBe(200)
    expect(at(described.upstream, 'generationConfig.responseJsonSchema')).toEqual({
      description: 'The answer',
      ...SCHEMA,
    })
    const agreeing = { ...SCHEMA, description: 'The answer' }
    const same = await send('gemini', format({ description: 'The answer', schema: agreeing }))
    expect(at(same.upstream, 'generationConfig.responseJsonSchema')).toEqual(agreeing)
    const param = 'response_format.json_schema.description'
    expectRefused('gemini', await send('gemini', format({ description: 'x' })), param)
    expectRefused('gemini', await send('gemini', format({ description: 'x', schema: null })), param)
    const other = { ...SCHEMA, description: 'Something else' }
    expectRefused(
      'gemini',
      await send('gemini', format({ description: 'x', schema: other })),
      param,
    )
  })

  it('response_format json_schema is refused for DeepSeek (its API answers 400 "This response_format type is unavailable now"), naming the field and provider; json_object and text are forwarded', async () => {
    const schema = { type: 'json_schema', json_schema: { name: 'answer', schema: SCHEMA } }
    const refused = await send('deepseek', { response_format: schema })
    expectRefused('deepseek', refused, 'response_format.type')
    expect(JSON.parse(refused.text).error.message).toContain('json_object')
    for (const format of [{ type: 'json_object' }, { type: 'text' }]) {
      const ok = await send('deepseek', { response_format: format })
      expect(ok.status, ok.text).toBe(200)
      expect(at(ok.upstream, 'response_format')).toEqual(format)
    }
    // The other OpenAI-compatible providers take it as sent.
    for (const dialect of ['openai', 'qwen'] as const) {
      const ok = await send(dialect, { response_format: schema })
      expect(ok.status, ok.text).toBe(200)
      expect(at(ok.upstream, 'response_format')).toEqual(schema)
    }
  })

  it('json_schema.schema: null is not set: Gemini gets JSON without a schema, never responseJsonSchema: null; OpenAI gets the format as sent', async () => {
    const format = { type: 'json_schema', json_schema: { name: 'answer', schema: null } }
    const gemini = await send('gemini', { response_format: format })
    expect(gemini.status, gemini.text).toBe(200)
    expect(at(gemini.upstream, 'generationConfig')).not.toHaveProperty('responseJsonSchema')
    expect(at(gemini.upstream, 'generationConfig.responseMimeType')).toBe('application/json')
    const openai = await send('openai', { response_format: format })
    expect(openai.status, openai.text).toBe(200)
    expect(at(openai.upstream, 'response_format')).toEqual(format)
  })

  const refusals = tableRows('gateway-refusals')
  const BASE: Record<string, unknown> = { tools: [TOOL] }

  for (const [pathCell, valueCell] of refusals) {
    const param = (pathCell as string).replaceAll('`', '')
    const value = JSON.parse(/`([^`]+)`/.exec(valueCell as string)?.[1] as string)
    it(`${param}: ${JSON.stringify(value)} is refused for every provider, nothing sent`, async () => {
      const body = structuredClone(param.startsWith('tools') ? BASE : {}) as Record<string, unknown>
      if (param.startsWith('messages')) {
        body['messages'] = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]
      }
      // Set the value at the row's path (`messages[0].content[0].type`).
      const keys = param.split(/\.|\[(\d+)\]/).filter((k) => k !== undefined && k !== '')
      let target = body as Record<string, unknown>
      for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>
      target[keys.at(-1) as string] = value
      for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
        const { status, text, sent } = await send(dialect, body)
        expect(status, text).toBe(400)
        const { error } = JSON.parse(text)
        expect(error.code).toBe('invalid_request')
        // The param may name the element (`modalities[1]`).
        expect(error.param.startsWith(param)).toBe(true)
        expect(error.message.startsWith(`${error.param}: `)).toBe(true)
        expect(sent).toHaveLength(0)
      }
    })
  }
})
