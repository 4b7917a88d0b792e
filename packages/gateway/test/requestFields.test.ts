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
  value: unknown
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
    translated: { gemini: 'application/json' },
  },
  seed: { value: 42, translated: { gemini: 42 } },
  n: { value: 1 },
  frequency_penalty: { value: 0.5, translated: { gemini: 0.5 } },
  presence_penalty: { value: -0.5, translated: { gemini: -0.5 } },
  logit_bias: { value: { '50256': -100 } },
  logprobs: { value: false },
  user: { value: 'user-1', translated: { anthropic: 'user-1' } },
  safety_identifier: { value: 'user-1', translated: { anthropic: 'user-1' } },
  prompt_cache_key: { value: 'cache-1' },
  prompt_cache_retention: { value: '24h' },
  service_tier: { value: 'flex' },
  store: { value: false },
  metadata: { value: { team: 'search' } },
  modalities: { value: ['text'] },
  prediction: { value: { type: 'content', content: 'draft' } },
  reasoning_effort: { value: 'low' },
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
          const fields = {
            ...sample.with,
            ...(sample.value === undefined ? {} : { [field]: sample.value }),
          }
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
            expect(at(upstream, field)).toEqual(sample.value)
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
