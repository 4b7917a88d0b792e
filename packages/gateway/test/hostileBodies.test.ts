import { brotliCompressSync, constants, deflateSync, gzipSync } from 'node:zlib'
import type { FakeProvider } from '@hourglass/testkit'
import { Pool } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KNOWN_FIELDS } from '../src/http/chatRequestSchema.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * "4xx for every bad request, 500 only for bugs": hostile bodies of every
 * kind, through the real gateway. None may get a 500; each answer to a bad
 * body is a 4xx whose error names the problem (a `param`, or a body-level
 * code), and nothing reaches the provider.
 */

interface Case {
  name: string
  body: Uint8Array | string
  headers?: Record<string, string>
}

const BODY_CODES = new Set([
  'invalid_json',
  'invalid_encoding',
  'invalid_utf8',
  'invalid_body',
  'request_too_large',
  'unsupported_encoding',
])

const ok = (fields: Record<string, unknown> = {}) => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  ...fields,
})
const json = (value: unknown) => JSON.stringify(value)
const deepArray = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
/** `template` with `@@` replaced by raw JSON text (too deep to build as a value and stringify). */
const raw = (template: unknown, value: string) => json(template).replace('"@@"', value)

const TOOL = { type: 'function', function: { name: 'f', parameters: { type: 'object' } } }

function encodingCases(): Case[] {
  const valid = Buffer.from(json(ok()))
  const notJson = Buffer.from('{"model": "m", "messages": [')
  const garbage = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37 + 11) % 256))
  const zeros = Buffer.alloc(8 * 1024 * 1024, 0x20) // 8 MiB of spaces: a compression bomb past the limit
  // Brotli's quality 4 packs them into the same 14 bytes as its default 11, in 9 ms instead of 250.
  const brBomb = brotliCompressSync(zeros, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } })
  const cases: Case[] = []
  const codecs: Array<[string, (b: Buffer) => Buffer, Buffer]> = [
    ['gzip', gzipSync, gzipSync(zeros)],
    ['deflate', deflateSync, deflateSync(zeros)],
    ['br', brotliCompressSync, brBomb],
  ]
  for (const [encoding, compress, bomb] of codecs) {
    const headers = { 'content-encoding': encoding }
    const whole = compress(valid)
    cases.push(
      { name: `${encoding}: garbage bytes`, body: garbage, headers },
      { name: `${encoding}: plain JSON labelled ${encoding}`, body: valid, headers },
      {
        name: `${encoding}: truncated to half`,
        body: whole.subarray(0, whole.length >> 1),
        headers,
      },
      { name: `${encoding}: last byte flipped`, body: flipLast(whole), headers },
      { name: `${encoding}: one byte`, body: whole.subarray(0, 1), headers },
      { name: `${encoding}: valid encoding of broken JSON`, body: compress(notJson), headers },
      { name: `${encoding}: a bomb past the size limit`, body: bomb, headers },
      { name: `${encoding}: twice encoded, labelled once`, body: compress(whole), headers },
    )
  }
  cases.push(
    { name: 'gzip data labelled br', body: gzipSync(valid), headers: { 'content-encoding': 'br' } },
    {
      name: 'br data labelled gzip',
      body: brotliCompressSync(valid),
      headers: { 'content-encoding': 'gzip' },
    },
    { name: 'unknown encoding', body: valid, headers: { 'content-encoding': 'compress' } },
    {
      name: 'two encodings listed',
      body: gzipSync(valid),
      headers: { 'content-encoding': 'gzip, br' },
    },
    {
      name: 'charset latin1',
      body: valid,
      headers: { 'content-type': 'application/json; charset=latin1' },
    },
    {
      name: 'charset nonsense',
      body: valid,
      headers: { 'content-type': 'application/json; charset=x-nope' },
    },
  )
  return cases
}

function flipLast(buffer: Buffer): Buffer {
  const copy = Buffer.from(buffer)
  copy[copy.length - 1] = (copy[copy.length - 1] as number) ^ 0xff
  return copy
}

function utf8Cases(): Case[] {
  const around = (bytes: number[]) =>
    Buffer.concat([
      Buffer.from('{"model":"m","messages":[{"role":"user","content":"a'),
      Buffer.from(bytes),
      Buffer.from('b"}]}'),
    ])
  return [
    { name: 'invalid UTF-8: 0xff', body: around([0xff]) },
    { name: 'invalid UTF-8: lone continuation byte', body: around([0x80]) },
    { name: 'invalid UTF-8: overlong "/"', body: around([0xc0, 0xaf]) },
    { name: 'invalid UTF-8: truncated 3-byte sequence', body: around([0xe4, 0xbd]) },
    { name: 'invalid UTF-8: encoded surrogate', body: around([0xed, 0xa0, 0x80]) },
    { name: 'invalid UTF-8: past U+10FFFF', body: around([0xf4, 0x90, 0x80, 0x80]) },
    {
      name: 'invalid UTF-8 in the model name',
      body: Buffer.from([...Buffer.from('{"model":"'), 0xfe, ...Buffer.from('","messages":[]}')]),
    },
    {
      name: 'invalid UTF-8, gzipped',
      body: gzipSync(around([0xff, 0xfe])),
      headers: { 'content-encoding': 'gzip' },
    },
  ]
}

/** Every place a value can nest: each top-level field, and inside messages, tools and formats. */
function nestingCases(depth: number): Case[] {
  const cases: Case[] = []
  const fields = [...KNOWN_FIELDS, 'some_unknown_field']
  for (const [shape, text] of [
    ['array', deepArray(depth)],
    ['object', deepObject(depth)],
  ] as const) {
    for (const field of fields) {
      cases.push({
        name: `${field}: ${shape} ${depth} deep`,
        body: raw(ok({ [field]: '@@' }), text),
      })
    }
    const inner: Array<[string, unknown]> = [
      ['messages[0]', ok({ messages: ['@@'] })],
      ['messages[0].content', ok({ messages: [{ role: 'user', content: '@@' }] })],
      [
        'messages[0].content[0].text',
        ok({ messages: [{ role: 'user', content: [{ type: 'text', text: '@@' }] }] }),
      ],
      ['messages[0].tool_calls', ok({ messages: [{ role: 'assistant', tool_calls: '@@' }] })],
      ['tools[0]', ok({ tools: ['@@'] })],
      [
        'tools[0].function.parameters',
        ok({ tools: [{ type: 'function', function: { name: 'f', parameters: '@@' } }] }),
      ],
      [
        'tools[0].function.parameters.properties',
        ok({
          tools: [
            {
              type: 'function',
              function: { name: 'f', parameters: { type: 'object', properties: '@@' } },
            },
          ],
        }),
      ],
      [
        'response_format.json_schema.schema',
        ok({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: '@@' } } }),
      ],
      [
        'tool_choice (allowed_tools)',
        ok({ tools: [TOOL], tool_choice: { type: 'allowed_tools', allowed_tools: '@@' } }),
      ],
      ['web_search_options.user_location', ok({ web_search_options: { user_location: '@@' } })],
      ['an unknown field inside an object', ok({ extra_body: { nested: '@@' } })],
    ]
    for (const [where, template] of inner) {
      cases.push({ name: `${where}: ${shape} ${depth} deep`, body: raw(template, text) })
    }
  }
  // Tool-call arguments are a JSON string: deep once parsed.
  cases.push({
    name: `messages[0].tool_calls[0].function.arguments: a string of an object ${depth} deep`,
    body: json(
      ok({
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'f', arguments: deepObject(depth) } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'done' },
        ],
      }),
    ),
  })
  return cases
}

/** Wrong types and absurd values for every field the schema knows. */
function valueCases(): Case[] {
  const values: Array<[string, string]> = [
    ['true', 'true'],
    ['"yes"', '"yes"'],
    ['-1', '-1'],
    ['0', '0'],
    ['1.5', '1.5'],
    ['1e308', '1e308'],
    ['-1e308', '-1e308'],
    ['1e999 (Infinity once parsed)', '1e999'],
    ['2^63', '9223372036854775808'],
    ['[]', '[]'],
    ['{}', '{}'],
    ['[null]', '[null]'],
    ['""', '""'],
    ['a 100 kB string', `"${'x'.repeat(100_000)}"`],
  ]
  const cases: Case[] = []
  for (const field of [...KNOWN_FIELDS].filter((f) => f !== 'stream')) {
    for (const [label, text] of values) {
      cases.push({ name: `${field}: ${label}`, body: raw(ok({ [field]: '@@' }), text) })
    }
  }
  return cases
}

/** Bodies every one of which is a client's mistake: each must be a 4xx naming it. */
function badRequests(encodings: Case[]): Case[] {
  const message = (m: unknown) => json(ok({ messages: [m] }))
  const huge = 'x'.repeat(3 * 1024 * 1024)
  return [
    { name: 'stream: "yes"', body: json(ok({ stream: 'yes' })) },
    { name: 'stream: 1', body: json(ok({ stream: 1 })) },
    { name: 'max_tokens: 1e308', body: json(ok({ max_tokens: 1e308 })) },
    { name: 'max_tokens: -1', body: json(ok({ max_tokens: -1 })) },
    { name: 'max_tokens: 0', body: json(ok({ max_tokens: 0 })) },
    { name: 'max_tokens: 1.5', body: json(ok({ max_tokens: 1.5 })) },
    { name: 'max_tokens: 2^53', body: json(ok({ max_tokens: 2 ** 53 })) },
    { name: 'max_completion_tokens: "100"', body: json(ok({ max_completion_tokens: '100' })) },
    { name: 'temperature: 1e308', body: json(ok({ temperature: 1e308 })) },
    { name: 'temperature: Infinity (1e999)', body: raw(ok({ temperature: '@@' }), '1e999') },
    { name: 'top_p: -1', body: json(ok({ top_p: -1 })) },
    { name: 'seed: 1e308', body: json(ok({ seed: 1e308 })) },
    { name: 'n: 1e308', body: json(ok({ n: 1e308 })) },
    { name: 'logit_bias: 1e308', body: json(ok({ logit_bias: { '1': 1e308 } })) },
    { name: 'user content null', body: message({ role: 'user', content: null }) },
    { name: 'system content null', body: message({ role: 'system', content: null }) },
    {
      name: 'tool content null',
      body: message({ role: 'tool', tool_call_id: 'c', content: null }),
    },
    {
      name: 'assistant content null without tool_calls',
      body: message({ role: 'assistant', content: null }),
    },
    { name: 'user content missing', body: message({ role: 'user' }) },
    { name: 'content part null', body: message({ role: 'user', content: [null] }) },
    {
      name: 'content part without text',
      body: message({ role: 'user', content: [{ type: 'text' }] }),
    },
    {
      name: 'image part',
      body: message({ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }),
    },
    { name: 'message null', body: message(null) },
    { name: 'message a string', body: message('hi') },
    { name: 'role unknown', body: message({ role: 'root', content: 'hi' }) },
    { name: 'role a number', body: message({ role: 1, content: 'hi' }) },
    {
      name: 'role function (deprecated)',
      body: message({ role: 'function', name: 'f', content: 'hi' }),
    },
    { name: 'tool without tool_call_id', body: message({ role: 'tool', content: 'x' }) },
    { name: 'tool_calls not an array', body: message({ role: 'assistant', tool_calls: {} }) },
    {
      name: 'tool_call without function',
      body: message({ role: 'assistant', tool_calls: [{ id: 'a', type: 'function' }] }),
    },
    {
      name: 'tool_call arguments an object',
      body: message({
        role: 'assistant',
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: {} } }],
      }),
    },
    { name: 'a typo inside a message', body: message({ role: 'user', contnet: 'hi' }) },
    { name: 'messages null', body: json(ok({ messages: null })) },
    { name: 'messages empty', body: json(ok({ messages: [] })) },
    {
      name: 'messages an object',
      body: json(ok({ messages: { 0: { role: 'user', content: 'x' } } })),
    },
    {
      name: 'messages: 500,000 numbers',
      body: `{"model":"m","messages":[${'1,'.repeat(499_999)}1]}`,
    },
    { name: 'model null', body: json(ok({ model: null })) },
    { name: 'model missing', body: json({ messages: [{ role: 'user', content: 'x' }] }) },
    { name: 'model a number', body: json(ok({ model: 4 })) },
    { name: 'model 3 MiB long', body: json(ok({ model: huge })) },
    {
      name: 'tool name 3 MiB long',
      body: json(ok({ tools: [{ type: 'function', function: { name: huge } }] })),
    },
    {
      name: 'tool name with spaces',
      body: json(ok({ tools: [{ type: 'function', function: { name: 'get weather' } }] })),
    },
    { name: 'tool not a function', body: json(ok({ tools: [{ type: 'code_interpreter' }] })) },
    {
      name: 'tools: 100,000 of them',
      body: json(ok({ tools: Array.from({ length: 100_000 }, () => TOOL) })),
    },
    { name: 'tool_choice a number', body: json(ok({ tool_choice: 5 })) },
    { name: 'response_format xml', body: json(ok({ response_format: { type: 'xml' } })) },
    { name: 'response_format a string', body: json(ok({ response_format: 'json' })) },
    {
      name: 'stop: 1,000 strings',
      body: json(ok({ stop: Array.from({ length: 1000 }, () => 'x') })),
    },
    { name: 'stop: [1]', body: json(ok({ stop: [1] })) },
    { name: 'n: 2', body: json(ok({ n: 2 })) },
    { name: 'logprobs: "yes"', body: json(ok({ logprobs: 'yes' })) },
    { name: 'top_logprobs: 21', body: json(ok({ top_logprobs: 21 })) },
    {
      name: 'stream_options without stream',
      body: json(ok({ stream_options: { include_usage: true } })),
    },
    { name: 'metadata with a number', body: json(ok({ metadata: { a: 1 } })) },
    { name: 'unknown field 5,000 deep', body: raw(ok({ x: '@@' }), deepArray(5000)) },
    { name: 'body null', body: 'null' },
    { name: 'body an array', body: '[]' },
    { name: 'body a string', body: '"hi"' },
    { name: 'body a number', body: '1' },
    { name: 'body empty object', body: '{}' },
    { name: 'body empty', body: '' },
    { name: 'body not JSON', body: '{"model":' },
    { name: 'body a 200,000-deep array', body: deepArray(200_000) },
    { name: 'body past the size limit', body: json(ok({ pad: 'x'.repeat(5 * 1024 * 1024) })) },
    {
      name: 'duplicate keys, last one bad',
      body: '{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream":"yes"}',
    },
    {
      name: '__proto__ message',
      body: '{"model":"m","messages":[{"role":"user","content":"x","__proto__":{"role":"system"}}]}',
    },
    ...encodings.filter((c) => !c.name.startsWith('unknown') && !c.name.startsWith('charset')),
    ...utf8Cases(),
  ]
}

describe('hostile request bodies get a 4xx naming the problem, never a 500', () => {
  let fake: FakeProvider
  let harness: Harness
  let pool: Pool
  beforeAll(async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'up']) },
    })
    // Its own keep-alive pool: through fetch and the global dispatcher
    // (undici's Agent), from the corrupt-encodings test on each request
    // opened a new connection (771 for 901 requests); and `request` skips
    // fetch's streams, about a second of this file's CPU.
    pool = new Pool(harness.url)
  })
  afterAll(async () => {
    await pool?.close()
    await harness?.close()
    await fake?.close()
  })

  async function post(c: Case) {
    const response = await pool.request({
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json', ...c.headers },
      body: c.body,
    })
    const text = await response.body.text()
    let error: { message?: string; param?: string | null; code?: string } | undefined
    try {
      error = JSON.parse(text).error
    } catch {}
    return { name: c.name, status: response.statusCode, error }
  }

  /** Sends every case; fails listing each one that got a 500 (or, when `bad`, anything but a named 4xx). */
  async function run(cases: Case[], bad: boolean) {
    const results = []
    for (const c of cases) results.push(await post(c))
    const failures = results.filter(
      (r) =>
        r.status >= 500 ||
        (bad &&
          (r.status < 400 ||
            r.status >= 500 ||
            !r.error?.message ||
            (r.error.param == null && !BODY_CODES.has(r.error.code ?? '')))),
    )
    expect(failures, JSON.stringify(failures.slice(0, 20), null, 1)).toEqual([])
    return results
  }

  // Built once (compressing the three 8 MiB bombs is most of it), sent by two tests.
  const encodings = encodingCases()
  const bad = badRequests(encodings)
  it('invalid UTF-8 is refused as such, not decoded to U+FFFD and sent', async () => {
    for (const r of await run(utf8Cases(), true)) expect(r.error?.code, r.name).toBe('invalid_utf8')
  })

  it(`${bad.length} bad requests (wrong types, absurd numbers, null contents, corrupt encodings, invalid UTF-8, huge strings): each a 4xx naming the problem, nothing sent`, async () => {
    const before = fake.requests.length
    await run(bad, true)
    expect(fake.requests.length).toBe(before)
  })

  it(`${encodings.length} corrupt or unsupported gzip/deflate/br bodies: 400, 413 or 415, never 500`, async () => {
    const results = await run(encodings, true)
    expect(results.filter((r) => r.name.includes('bomb')).map((r) => r.status)).toEqual([
      413, 413, 413,
    ])
    expect(results.find((r) => r.name === 'unknown encoding')?.status).toBe(415)
    const corrupt = results.filter(
      (r) =>
        /garbage|labelled|truncated|flipped|one byte/.test(r.name) && !r.name.includes('twice'),
    )
    expect(corrupt.length).toBe(17)
    for (const r of corrupt) expect(r.error?.code, r.name).toBe('invalid_encoding')
  })

  const deep = [...nestingCases(5_000), ...nestingCases(65), ...nestingCases(100_000)]
  it(`${deep.length} bodies nested 65, 5,000 and 100,000 levels deep in every field: each a 4xx naming the field`, async () => {
    const before = fake.requests.length
    await run(deep, true)
    expect(fake.requests.length).toBe(before)
  })

  const values = valueCases()
  it(`${values.length} wrong types and absurd values for every field: never a 500, every 4xx names its field`, async () => {
    const results = await run(values, false)
    const refused = results.filter((r) => r.status >= 400)
    for (const r of refused) {
      expect(r.error?.param, r.name).toBeTruthy()
      expect(r.error?.message, r.name).toContain(r.error?.param)
    }
    // Most of them are refused; the rest are values a field accepts (temperature: 0).
    expect(refused.length).toBeGreaterThan(values.length * 0.8)
  })

  it('400,000 bad content parts (800 KB) are a 400 naming the first, not a 500', async () => {
    // zod's refusal of the array branch held one issue per part, and picking
    // the deepest spread them all as arguments: "Maximum call stack size exceeded".
    const parts = Array(400_000).fill('1').join(',')
    const before = fake.requests.length
    for (const role of ['user', 'assistant']) {
      const r = await post({
        name: role,
        body: `{"model":"m","messages":[{"role":"${role}","content":[${parts}]}]}`,
      })
      expect(r.status, role).toBe(400)
      expect(r.error?.param, role).toBe('messages[0].content[0]')
    }
    expect(fake.requests.length).toBe(before)
  })

  it('a list names its first bad element whatever its length: 1,000 parts as 1,001', async () => {
    // Read up to its first bad element past 1,000 elements only, a list
    // named a later, deeper field below: `content[5].text` at 1,000 parts,
    // `content[0]` at 1,001.
    const before = fake.requests.length
    for (const length of [1_000, 1_001]) {
      for (const [role, deeper] of [
        ['user', { type: 'text', text: 5 }],
        ['assistant', { type: 'refusal', refusal: 5 }],
      ] as const) {
        const content: unknown[] = Array(length).fill({ type: 'text', text: 'x' })
        content[0] = 1
        content[5] = deeper
        const name = `${length} ${role}`
        const r = await post({ name, body: json({ model: 'm', messages: [{ role, content }] }) })
        expect(r.status, name).toBe(400)
        expect(r.error?.param, name).toBe('messages[0].content[0]')
      }
    }
    expect(fake.requests.length).toBe(before)
  })

  it('a field name quoted in a refusal shows its bidi overrides, C1 controls, separators and joiners escaped, not raw', async () => {
    // A zero-width joiner too: a name is an id, as a model name (kept in a provider's words).
    const key = '\u202eevil\u0085\u009b31m\u2028\u200b\u200d'
    const r = await post({
      name: 'odd key',
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x', [key]: 1 }] }),
    })
    expect(r.status).toBe(400)
    const shown = '["\\u202eevil\\u0085\\u009b31m\\u2028\\u200b\\u200d"]'
    expect(r.error?.param).toBe(`messages[0]${shown}`)
    expect(r.error?.message).toBe(`messages[0]${shown}: unknown field`)
  })

  it('a "__proto__" key in metadata, logit_bias, a tool\'s parameters, a schema or a tool_choice object is refused naming it, not dropped: nothing sent', async () => {
    // JSON.parse keeps the key; zod's records skipped it unchecked, so
    // `metadata` reached OpenAI as {} and logit_bias passed its token-id check.
    const proto = (text: string) => `{"__proto__":${text},"a":"1"}`
    const cases: Array<[param: string, body: string]> = [
      ['metadata', raw(ok({ metadata: '@@' }), proto('"x"'))],
      ['logit_bias', raw(ok({ logit_bias: '@@' }), '{"__proto__":1}')],
      [
        'tools[0].function.parameters',
        raw(
          ok({ tools: [{ type: 'function', function: { name: 'f', parameters: '@@' } }] }),
          proto('{}'),
        ),
      ],
      [
        'response_format.json_schema.schema',
        raw(
          ok({
            response_format: { type: 'json_schema', json_schema: { name: 's', schema: '@@' } },
          }),
          proto('{}'),
        ),
      ],
      // Forwarded as they are, from zod's copy: the key was left out of it.
      ['tool_choice', raw(ok({ tool_choice: '@@' }), '{"type":"allowed_tools","__proto__":{}}')],
    ]
    const before = fake.requests.length
    for (const [param, body] of cases) {
      const r = await post({ name: param, body })
      expect(r.status, param).toBe(400)
      expect(r.error?.code, param).toBe('invalid_request')
      expect(r.error?.param, param).toBe(`${param}.__proto__`)
      expect(r.error?.message, param).toBe(
        `${param}.__proto__: a key named "__proto__" cannot be read (JavaScript objects drop it): rename it`,
      )
    }
    expect(fake.requests.length).toBe(before)
    // The same key deeper down, inside a value the schema does not copy, goes as sent.
    const nested = await post({
      name: 'nested',
      body: raw(
        ok({
          tools: [
            {
              type: 'function',
              function: { name: 'f', parameters: { type: 'object', properties: '@@' } },
            },
          ],
        }),
        proto('{}'),
      ),
    })
    expect(nested.status).toBe(200)
    expect(fake.requests.at(-1)?.rawBody).toContain('"properties":{"__proto__":{},"a":"1"}')
  })

  it('a field nested exactly 64 levels deep is accepted and reaches the provider intact', async () => {
    const parameters = JSON.parse(deepObject(62)) // parameters + 62 = within the 64 levels
    const r = await post({
      name: 'max depth',
      body: json(ok({ tools: [{ type: 'function', function: { name: 'f', parameters } }] })),
    })
    expect(r.status).toBe(200)
    expect((fake.requests.at(-1)?.body as { tools?: unknown[] } | undefined)?.tools).toHaveLength(1)
  })
})
