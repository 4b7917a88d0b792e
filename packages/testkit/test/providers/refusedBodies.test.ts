import { afterEach, describe, expect, it } from 'vitest'
import {
  type FakeProvider,
  type ProviderDialect,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'

/**
 * Requests every real API refuses before generating, which the fake used to
 * answer with its scripted 200: a body that is not JSON, a string escape
 * Anthropic's parser cannot read, OpenAI's `stream_options` without `stream`.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body,
  })

async function start(dialect: ProviderDialect): Promise<FakeProvider> {
  fake = await startFakeProvider({ dialect, reply: reply.text('generated anyway') })
  return fake
}

describe('a body that is not JSON', () => {
  const cut = '{"model":"m","messages":[{"role":"user","content":"hi"}'

  it.each(['openai', 'deepseek', 'qwen', 'doubao'] as const)(
    '%s chat completions: 400 invalid_request_error, as OpenAI words it',
    async (dialect) => {
      const f = await start(dialect)
      const res = await post(`${f.url}/v1/chat/completions`, cut)
      expect(res.status).toBe(400)
      const body = (await res.json()) as { error: Record<string, unknown> }
      expect(body.error).toMatchObject({ type: 'invalid_request_error', param: null, code: null })
      expect(body.error['message']).toMatch(/^We could not parse the JSON body of your request\./)
      expect(f.requests[0]).toMatchObject({ outcome: 'error', paid: false, tokensSent: 0 })
    },
  )

  it('Anthropic: 400 invalid_request_error "The request body is not valid JSON: …", no details', async () => {
    const f = await start('anthropic')
    const res = await post(`${f.url}/v1/messages`, cut)
    expect(res.status).toBe(400)
    const body = (await res.json()) as { type: string; error: Record<string, unknown> }
    expect(body.type).toBe('error')
    expect(Object.keys(body.error)).toEqual(['type', 'message'])
    expect(body.error['type']).toBe('invalid_request_error')
    expect(body.error['message']).toMatch(/^The request body is not valid JSON: /)
    expect(f.paidGenerations).toBe(0)
  })

  it.each(['generateContent', 'streamGenerateContent?alt=sse', 'streamGenerateContent'])(
    'Gemini %s: 400 INVALID_ARGUMENT with a BadRequest field violation',
    async (method) => {
      const f = await start('gemini')
      const res = await post(`${f.baseURL}/models/gemini-2.5-flash:${method}`, '{"contents": [')
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual({
        error: {
          code: 400,
          message: 'Invalid JSON payload received. Unexpected token.',
          status: 'INVALID_ARGUMENT',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.BadRequest',
              fieldViolations: [
                { description: 'Invalid JSON payload received. Unexpected token.' },
              ],
            },
          ],
        },
      })
    },
  )

  it('a scripted error still goes out as scripted, and an empty body is not refused as unparseable', async () => {
    const f = await start('openai')
    f.enqueue({ kind: 'error', status: 503, body: 'down' })
    expect((await post(`${f.url}/v1/chat/completions`, cut)).status).toBe(503)
    // Read as no body, not as broken JSON: what OpenAI refuses it for is its missing model (below).
    const empty = await post(`${f.url}/v1/chat/completions`, '')
    expect(((await empty.json()) as { error: { message: string } }).error.message).toBe(
      'you must provide a model parameter',
    )
  })
})

describe('OpenAI: a chat completion without its model or its messages', () => {
  const refusal = async (res: Response) => ({
    status: res.status,
    error: ((await res.json()) as { error: unknown }).error,
  })

  it('no model (left out, null, or no body at all): 400 "you must provide a model parameter", nothing generated', async () => {
    const f = await start('openai')
    // `model: undefined`, an unset setting, is what JSON.stringify leaves out.
    const bodies = [
      JSON.stringify({ model: undefined, messages: [{ role: 'user', content: 'hi' }] }),
      '{"model":null,"messages":[{"role":"user","content":"hi"}],"stream":true}',
      '',
    ]
    for (const body of bodies) {
      expect(await refusal(await post(`${f.url}/v1/chat/completions`, body))).toEqual({
        status: 400,
        error: {
          message: 'you must provide a model parameter',
          type: 'invalid_request_error',
          param: null,
          code: null,
        },
      })
    }
    expect(f.requests.map((r) => r.outcome)).toEqual(['error', 'error', 'error'])
    expect(f.paidGenerations).toBe(0)
  })

  it("no messages: 400 missing_required_parameter naming 'messages'", async () => {
    const f = await start('openai')
    const res = await post(`${f.url}/v1/chat/completions`, '{"model":"gpt-4o-mini"}')
    expect(await refusal(res)).toEqual({
      status: 400,
      error: {
        message: "Missing required parameter: 'messages'.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'missing_required_parameter',
      },
    })
  })

  it('the compatible dialects are not held to it: their own answers are not documented', async () => {
    const f = await start('deepseek')
    expect((await post(`${f.url}/chat/completions`, '{"messages":[]}')).status).toBe(200)
  })
})

describe('Anthropic and lone surrogates', () => {
  const body = (content: string) =>
    `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"${content}"}]}`

  it('a lone high surrogate escape is a 400 naming where it is, as Anthropic’s parser words it', async () => {
    const f = await start('anthropic')
    // What JSON.stringify writes for a string cut inside an emoji.
    const raw = body('cut \\ud83d')
    expect(JSON.stringify('cut \ud83d')).toBe('"cut \\ud83d"')
    const res = await post(`${f.url}/v1/messages`, raw)
    expect(res.status).toBe(400)
    const at = raw.indexOf('\\ud83d')
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      `The request body is not valid JSON: no low surrogate in string: line 1 column ${at + 1} (char ${at})`,
    )
  })

  it('a whole pair, an escaped backslash before the u, and a raw emoji are read as they are', async () => {
    const f = await start('anthropic')
    for (const content of ['\\ud83d\\ude00', 'C:\\\\ud83d', '😀']) {
      expect((await post(`${f.url}/v1/messages`, body(content))).status).toBe(200)
    }
  })
})

describe('DeepSeek and lone surrogates', () => {
  const body = (content: string) =>
    `{"model":"deepseek-chat","messages":[{"role":"user","content":"hi"},{"role":"user","content":"${content}"}]}`
  const refusal = async (f: FakeProvider, raw: string) => {
    const res = await post(`${f.url}/v1/chat/completions`, raw)
    expect(res.status).toBe(400)
    return ((await res.json()) as { error: Record<string, unknown> }).error
  }

  it('a lone surrogate escape is a 400 naming the field, as DeepSeek’s parser words it', async () => {
    const f = await start('deepseek')
    const cut = body('cut \\ud83d')
    expect(await refusal(f, cut)).toEqual({
      message: `Failed to parse the request body as JSON: messages[1].content: unexpected end of hex escape at line 1 column ${cut.indexOf('\\ud83d') + 7}`,
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_request_error',
    })
    const low = body('\\ude00 low')
    expect((await refusal(f, low))['message']).toBe(
      `Failed to parse the request body as JSON: messages[1].content: lone leading surrogate in hex escape at line 1 column ${low.indexOf('\\ude00') + 6}`,
    )
    expect(f.requests).toHaveLength(2)
  })

  it('names the string it found, however deep, whatever the keys’ order or repeats', async () => {
    const f = await start('deepseek')
    const message = async (raw: string) =>
      String((await refusal(f, raw))['message']).replace(/ at line .*$/, '')
    // Read from the parsed value, 5,000 levels overflowed the stack: a 500.
    const deep = `{"model":"deepseek-chat","messages":[],"x":${'['.repeat(100_000)}"\\ud83d"${']'.repeat(100_000)}}`
    expect(await message(deep)).toMatch(
      /^Failed to parse the request body as JSON: x(\[0\]){100000}: unexpected end of hex escape$/,
    )
    // JSON.parse puts integer-like keys first, and keeps a repeated key's last value.
    expect(
      await message(
        '{"model":"deepseek-chat","messages":[],"metadata":{"b":"\\udc00","1":"\\ud83d"}}',
      ),
    ).toBe(
      'Failed to parse the request body as JSON: metadata.b: lone leading surrogate in hex escape',
    )
    expect(
      await message(
        '{"model":"deepseek-chat","messages":[{"role":"user","content":"\\ud83d"}],"messages":[{"role":"user","content":"hi"}]}',
      ),
    ).toBe(
      'Failed to parse the request body as JSON: messages[0].content: unexpected end of hex escape',
    )
  })

  it('a whole pair, an escaped backslash before the u, a raw emoji, and another dialect are answered', async () => {
    const f = await start('deepseek')
    for (const content of ['\\ud83d\\ude00', 'C:\\\\ud83d', '😀']) {
      expect((await post(`${f.url}/v1/chat/completions`, body(content))).status).toBe(200)
    }
    await f.close()
    const qwen = await start('qwen')
    expect((await post(`${qwen.url}/v1/chat/completions`, body('cut \\ud83d'))).status).toBe(200)
  })
})

describe("OpenAI's stream_options without stream", () => {
  const body = (extra: Record<string, unknown>) =>
    JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], ...extra })

  it('is a 400 naming the param', async () => {
    const f = await start('openai')
    for (const extra of [
      { stream_options: { include_usage: true } },
      { stream: false, stream_options: { include_usage: true } },
    ]) {
      const res = await post(`${f.url}/v1/chat/completions`, body(extra))
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual({
        error: {
          message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
          type: 'invalid_request_error',
          param: 'stream_options',
          code: null,
        },
      })
    }
  })

  it('is answered when streaming, or when null', async () => {
    const f = await start('openai')
    const streamed = await post(
      `${f.url}/v1/chat/completions`,
      body({ stream: true, stream_options: { include_usage: true } }),
    )
    expect(streamed.status).toBe(200)
    await streamed.text()
    expect(
      (await post(`${f.url}/v1/chat/completions`, body({ stream_options: null }))).status,
    ).toBe(200)
  })
})

describe("Anthropic's anthropic-version header", () => {
  const body = JSON.stringify({
    model: 'claude',
    max_tokens: 10,
    messages: [{ role: 'user', content: 'hi' }],
  })

  it('missing: 400 "anthropic-version: header is required"', async () => {
    const f = await start('anthropic')
    const res = await fetch(`${f.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
      body,
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' },
      request_id: 'req_011CFakeHourglass',
    })
    expect(f.paidGenerations).toBe(0)
  })

  it('sent twice (a proxy adding its own beside the client’s) or unknown: not a valid version', async () => {
    const f = await start('anthropic')
    const doubled = new Headers({ 'content-type': 'application/json' })
    doubled.append('anthropic-version', '2023-06-01')
    doubled.append('anthropic-version', '2023-06-01')
    for (const headers of [doubled, { 'anthropic-version': '2024-10-22' }]) {
      const res = await fetch(`${f.url}/v1/messages`, { method: 'POST', headers, body })
      expect(res.status).toBe(400)
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
        /^anthropic-version: "(2023-06-01, 2023-06-01|2024-10-22)" is not a valid version$/,
      )
    }
  })

  it('another dialect’s fake answering Anthropic’s format asks none of Anthropic’s own checks (DeepSeek’s Anthropic API ignores the header)', async () => {
    const f = await start('deepseek')
    const res = await fetch(`${f.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
      body: JSON.stringify({
        model: 'deepseek-chat',
        messages: [{ role: 'user', content: 'hi \ud83d' }],
      }),
    })
    expect(res.status).toBe(200)
  })

  it('2023-06-01 and 2023-01-01 are answered; another API’s route does not ask for it', async () => {
    const f = await start('anthropic')
    for (const version of ['2023-06-01', '2023-01-01']) {
      const res = await post(`${f.url}/v1/messages`, body, { 'anthropic-version': version })
      expect(res.status).toBe(200)
    }
    const chat = await fetch(`${f.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(chat.status).toBe(200)
  })
})

describe("Anthropic's required max_tokens", () => {
  it('missing: 400 "max_tokens: Field required", the scripted answer not given', async () => {
    const f = await start('anthropic')
    const res = await post(
      `${f.url}/v1/messages`,
      JSON.stringify({ model: 'claude', messages: [{ role: 'user', content: 'hi' }] }),
    )
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
      request_id: 'req_011CFakeHourglass',
    })
    expect(f.requests[0]).toMatchObject({ outcome: 'error', paid: false })
  })

  it('OpenAI-compatible chat may leave it out', async () => {
    const f = await start('openai')
    const res = await post(
      `${f.url}/v1/chat/completions`,
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    )
    expect(res.status).toBe(200)
  })
})

describe("OpenAI's reasoning models and max_tokens", () => {
  const ask = (model: string, extra: Record<string, unknown>) =>
    JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra })

  it.each(['gpt-5', 'gpt-5.1', 'gpt-5-mini', 'o1', 'o3-mini', 'o4-mini-2025-04-16'])(
    '%s: max_tokens is a 400 unsupported_parameter naming max_completion_tokens',
    async (model) => {
      const f = await start('openai')
      const res = await post(`${f.url}/v1/chat/completions`, ask(model, { max_tokens: 64 }))
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual({
        error: {
          message:
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'unsupported_parameter',
        },
      })
      const right = await post(
        `${f.url}/v1/chat/completions`,
        ask(model, { max_completion_tokens: 64 }),
      )
      expect(right.status).toBe(200)
    },
  )

  it('gpt-4o, gpt-5-chat-latest and the compatible dialects take max_tokens', async () => {
    const f = await start('openai')
    for (const model of ['gpt-4o', 'gpt-5-chat-latest', 'omni-moderation']) {
      const res = await post(`${f.url}/v1/chat/completions`, ask(model, { max_tokens: 64 }))
      expect(res.status).toBe(200)
    }
    await f.close()
    const deepseek = await start('deepseek')
    const res = await post(`${deepseek.url}/chat/completions`, ask('o1', { max_tokens: 64 }))
    expect(res.status).toBe(200)
  })
})
