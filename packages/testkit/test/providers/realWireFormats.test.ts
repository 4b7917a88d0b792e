/**
 * Pins the fakes to what the real APIs send, where an audit found the fake
 * differed. Each case cites the source it was checked against.
 */
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  anthropicErrors,
  doubaoErrors,
  type FakeProvider,
  geminiErrors,
  openAIErrors,
  type ProviderDialect,
  qwenErrors,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const chat = (base: string, body: Record<string, unknown> = {}) =>
  fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...body }),
  })

interface Chunk {
  choices: { delta: Record<string, unknown>; finish_reason: string | null }[]
  usage?: unknown
}

describe('usage in chat-completions streams', () => {
  // OpenAI: openai-openapi `ChatCompletionStreamOptions.include_usage`: "an
  // additional chunk will be streamed before the data: [DONE] message ... the
  // choices field will always be an empty array. All other chunks will also
  // include a usage field, but with a null value."
  // Qwen compatible mode: Model Studio's Qwen API reference (help.aliyun.com/
  // zh/model-studio/use-qwen-by-calling-api), chunk example: every chunk
  // `"usage":null`, then `{"choices":[], ..., "usage":{...}}`; "usage ... 只在
  // include_usage为true时，在最后一个chunk显示". Ark and Qianfan v2 document the
  // same `stream_options.include_usage` switch.
  for (const dialect of ['openai', 'qwen', 'doubao', 'ernie'] satisfies ProviderDialect[]) {
    it(`${dialect}: with include_usage, usage: null on every chunk, then a choices: [] usage chunk`, async () => {
      fake = await startFakeProvider({ dialect, reply: reply.text('一二三') })
      const stream = await readSse(
        await chat(fake.baseURL, { stream: true, stream_options: { include_usage: true } }),
      )
      const chunks = dataOf<Chunk>(stream)
      const last = chunks.at(-1)!
      expect(last.choices).toEqual([])
      expect(last.usage).toMatchObject({ completion_tokens: 3 })
      for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull()
      expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop')
      expect(stream.events.at(-1)!.data).toBe('[DONE]')
    })

    // Qwen and Doubao say `usage: null` on every chunk even then
    // (qwenWireFormat.test.ts, doubaoWireFormat.test.ts).
    it(`${dialect}: without include_usage, no usage anywhere in the stream`, async () => {
      fake = await startFakeProvider({ dialect, reply: reply.text('一二三') })
      const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
      const none = dialect === 'qwen' || dialect === 'doubao' ? null : undefined
      expect(chunks.every((c) => c.usage === none && c.choices.length === 1)).toBe(true)
      expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop')
    })
  }

  it('deepseek: usage rides on the finishing chunk (its observed behaviour), asked for or not', async () => {
    fake = await startFakeProvider({ dialect: 'deepseek', reply: reply.text('一二三') })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    expect(chunks.at(-1)).toMatchObject({
      choices: [{ finish_reason: 'stop' }],
      usage: { completion_tokens: 3 },
    })
    expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true)
  })

  // api-docs.deepseek.com/api/create-chat-completion (quoted in
  // moona3k/macparakeet#1087): with include_usage "all chunks in the stream
  // will include a usage field, whose value is null on every chunk except the
  // last one ... no separate usage-only chunk is emitted"; raw chunks with
  // "usage":null in neuron-core/neuron-ai#223; cache counts in brainlid/langchain#288.
  it('deepseek with include_usage: usage: null on every chunk, usage (with cache counts) on the finishing one, no choices: [] chunk', async () => {
    fake = await startFakeProvider({ dialect: 'deepseek', reply: reply.text('一二三') })
    const chunks = dataOf<Chunk>(
      await readSse(
        await chat(fake.baseURL, { stream: true, stream_options: { include_usage: true } }),
      ),
    )
    expect(chunks.every((c) => c.choices.length === 1)).toBe(true)
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull()
    expect(chunks.at(-1)).toMatchObject({
      choices: [{ finish_reason: 'stop' }],
      usage: {
        completion_tokens: 3,
        prompt_cache_hit_tokens: 0,
        prompt_cache_miss_tokens: expect.any(Number),
        prompt_tokens_details: { cached_tokens: 0 },
      },
    })
  })
})

describe("DeepSeek's response formats", () => {
  it('refuses json_schema with its 400 (it has no structured outputs), answers json_object', async () => {
    fake = await startFakeProvider({ dialect: 'deepseek', reply: reply.text('{}') })
    const schema = { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } }
    const refused = await chat(fake.baseURL, { response_format: schema })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({
      error: { message: 'This response_format type is unavailable now' },
    })
    const json = await chat(fake.baseURL, { response_format: { type: 'json_object' } })
    expect(json.status).toBe(200)
    await json.body?.cancel()
    // OpenAI takes it.
    await fake.close()
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('{}') })
    const openai = await chat(fake.baseURL, { response_format: schema })
    expect(openai.status).toBe(200)
    await openai.body?.cancel()
  })
})

describe('DeepSeek keeps a slow non-streamed request alive with empty lines', () => {
  // api-docs.deepseek.com/quick_start/rate_limit: "Non-streaming requests:
  // Continuously return empty lines ... These contents do not affect the
  // parsing of the JSON body by the OpenAI SDK."
  it('sends the headers at once, then blank lines while generating, then the JSON', async () => {
    // The fake's time is a manual clock: the headers must come before any of
    // it passes, whatever a busy machine does to a real 150 ms bound.
    const clock = new ManualClock()
    fake = await startFakeProvider({
      dialect: 'deepseek',
      clock,
      reply: reply.text('答案', { firstTokenDelayMs: 200, keepAliveEveryMs: 40 }),
    })
    const res = await chat(fake.baseURL)
    expect(clock.now()).toBe(0)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-length')).toBeNull()
    // Then the generation's 200 ms pass, 1 ms at a time, each step once the
    // fake has written what the last one was due.
    let done = false
    const body = res.text().finally(() => {
      done = true
    })
    for (let ms = 0; !done && ms < 1000; ms++) {
      clock.advance(1)
      await new Promise((resolve) => setImmediate(resolve))
    }
    const text = await body
    expect(text).toMatch(/^\n{2,}\{/)
    expect(JSON.parse(text)).toMatchObject({ choices: [{ message: { content: '答案' } }] })
    expect(fake.requests[0]).toMatchObject({ outcome: 'success', paid: true })
  })

  it('other dialects still hold the headers until the answer is ready', async () => {
    fake = await startFakeProvider({
      dialect: 'openai',
      reply: reply.text('x', { firstTokenDelayMs: 200, keepAliveEveryMs: 40 }),
    })
    const started = performance.now()
    const res = await chat(fake.baseURL)
    expect(performance.now() - started).toBeGreaterThanOrEqual(150)
    expect((await res.text()).startsWith('{')).toBe(true)
  })
})

describe('Gemini stream end', () => {
  const streamOf = async (script: ReturnType<typeof reply.text>) => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: script })
    const stream = await readSse(
      await fetch(`${fake.baseURL}/models/g:streamGenerateContent?alt=sse`, {
        method: 'POST',
        body: '{}',
      }),
    )
    return stream.events.map(
      (e) =>
        JSON.parse(e.data) as {
          candidates: { content: Record<string, unknown>; finishReason?: string }[]
          usageMetadata: Record<string, unknown>
        },
    )
  }

  // Raw gemini-2.5-flash and -flash-lite `alt=sse` streams: the last text
  // rides with `"finishReason": "STOP"` and the final usage (`{"parts":
  // [{"text": "3\n4\n5"}],…},"finishReason": "STOP","index": 0}`);
  // envoyproxy/ai-gateway#2107: "when the finish_reason is stop, the content
  // is not empty". The fake closed with a chunk of no parts after the text.
  it('a text answer that stops ends on its last text, which carries finishReason and usage', async () => {
    const chunks = await streamOf(reply.text('a b'))
    expect(chunks).toHaveLength(2)
    expect(chunks[0]!.candidates[0]).not.toHaveProperty('finishReason')
    expect(chunks[1]!.candidates[0]).toMatchObject({
      content: { parts: [{ text: ' b' }], role: 'model' },
      finishReason: 'STOP',
    })
    expect(chunks[1]!.usageMetadata).toMatchObject({ candidatesTokenCount: 2 })
  })

  // pydantic/pydantic-ai#2631: a logged Gemini candidate `Content(role='model')`
  // with finish_reason STOP and no parts (after a function call);
  // envoyproxy/ai-gateway#2107: on `MAX_TOKENS` "the content would be empty";
  // agentjido/req_llm#638: a final `{"candidates":[{"finishReason":"STOP"}],
  // "usageMetadata":…}`. proto3 JSON leaves an empty repeated field out, so
  // `parts: []` never appears.
  it('a text answer the cap stopped closes with a chunk of finishReason and usage, and no parts key', async () => {
    const chunks = await streamOf(reply.text('a b', { finishReason: 'length' }))
    expect(chunks).toHaveLength(3)
    const last = chunks.at(-1)!
    expect(last.candidates[0]).toMatchObject({
      finishReason: 'MAX_TOKENS',
      content: { role: 'model' },
    })
    expect(last.candidates[0]!.content).not.toHaveProperty('parts')
    expect(JSON.stringify(chunks)).not.toContain('"parts":[]')
  })
})

describe('Gemini usageMetadata', () => {
  // ai.google.dev/api/generate-content#UsageMetadata: thoughts are counted in
  // `thoughtsTokenCount`, not in `candidatesTokenCount`; the total is the sum.
  // A real gemini-3-flash answer: prompt 34, candidates 418, thoughts 438, total 890.
  it('counts thoughts apart from the answer, in JSON and at the end of a stream', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('a b c', { thinking: 'x y', usage: { inputTokens: 10 } }),
    })
    const call = (method: string, query = '') =>
      fetch(`${fake!.baseURL}/models/gemini-2.5-flash:${method}${query}`, {
        method: 'POST',
        headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
        body: '{}',
      })
    const expected = {
      promptTokenCount: 10,
      candidatesTokenCount: 3,
      thoughtsTokenCount: 2,
      totalTokenCount: 15,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 10 }],
    }
    const json = (await (await call('generateContent')).json()) as { usageMetadata: unknown }
    expect(json.usageMetadata).toEqual(expected)
    const stream = await readSse(await call('streamGenerateContent', '?alt=sse'))
    const last = JSON.parse(stream.events.at(-1)!.data) as { usageMetadata: unknown }
    expect(last.usageMetadata).toEqual(expected)
  })

  it('leaves thoughtsTokenCount out when there were no thoughts', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('a b') })
    const res = await fetch(`${fake.baseURL}/models/g:generateContent`, {
      method: 'POST',
      body: '{}',
    })
    const json = (await res.json()) as { usageMetadata: Record<string, unknown> }
    expect(json.usageMetadata).not.toHaveProperty('thoughtsTokenCount')
    expect(json.usageMetadata['candidatesTokenCount']).toBe(2)
  })
})

describe('ERNIE / Qianfan v2 rate limits', () => {
  // github.com/PaddlePaddle/ERNIE/issues/1031, verbatim from the OpenAI SDK:
  // "Error code: 429 - {'error': {'code': 'rpm_rate_limit_exceeded', 'message':
  // 'Rate limit reached for RPM', 'type': 'rate_limit_exceeded'}, 'id': 'as-wbx23eriqh'}"
  it('the ernie dialect (baseURL /v2) rate-limits with a 429 in the v2 shape, not v1’s 200 + error_code', async () => {
    fake = await startFakeProvider({ dialect: 'ernie' })
    fake.rateLimit({ forMs: 60_000 })
    const res = await chat(fake.baseURL)
    expect(res.status).toBe(429)
    expect(await res.json()).toEqual({
      error: {
        code: 'rpm_rate_limit_exceeded',
        message: 'Rate limit reached for RPM',
        type: 'rate_limit_exceeded',
      },
      id: expect.stringMatching(/^as-/),
    })
  })
})

describe('error helpers added by the audit', () => {
  it('qwenErrors.compatibleTokenLimited: a transient TPM throttle spelt insufficient_quota, HTTP 429', async () => {
    // github.com/can1357/oh-my-pi/issues/8496, openclaw/openclaw#148275.
    fake = await startFakeProvider({ dialect: 'qwen', reply: qwenErrors.compatibleTokenLimited() })
    const res = await chat(fake.baseURL)
    expect(res.status).toBe(429)
    expect(await res.json()).toMatchObject({
      error: {
        code: 'insufficient_quota',
        type: 'insufficient_quota',
        message: expect.stringContaining('error-code#token-limit'),
      },
    })
  })

  it('qwenErrors.freeTierExhausted: HTTP 403 AllocationQuota.FreeTierOnly, a spent free tier (no Throttling prefix: it is not a throttle)', async () => {
    // The body as quoted from a real DashScope reply (errs.dmxapi.cn/detail.php?id=1942).
    fake = await startFakeProvider({ dialect: 'qwen', reply: qwenErrors.freeTierExhausted() })
    const res = await chat(fake.baseURL)
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({
      error: {
        code: 'AllocationQuota.FreeTierOnly',
        type: 'AllocationQuota.FreeTierOnly',
        message: expect.stringContaining('free tier of the model has been exhausted'),
      },
    })
  })

  it('qwenErrors.compatibleDataInspectionFailed: OpenAI shape, lower-case code', async () => {
    fake = await startFakeProvider({
      dialect: 'qwen',
      reply: qwenErrors.compatibleDataInspectionFailed(),
    })
    const res = await chat(fake.baseURL)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({
      error: { code: 'data_inspection_failed', type: 'data_inspection_failed', param: null },
    })
  })

  it('openAIErrors.contextTooLong names param "messages", as OpenAI does', () => {
    expect(openAIErrors.contextTooLong().body).toMatchObject({
      error: { param: 'messages', code: 'context_length_exceeded' },
    })
  })

  it('doubaoErrors: Ark error-code table wording, type and status', () => {
    // volcengine.com/docs/82379/1299023, docs.byteplus.com/en/docs/ModelArk/1299023
    const rpm = doubaoErrors.rateLimited()
    expect(rpm.status).toBe(429)
    expect(rpm.body).toMatchObject({
      error: {
        code: 'RateLimitExceeded.EndpointRPMExceeded',
        type: 'TooManyRequests',
        message: expect.stringMatching(
          /^The Requests Per Minute \(RPM\) limit of the associated endpoint for your account has been exceeded\. Request ID: /,
        ),
      },
    })
    const overdue = doubaoErrors.accountOverdue()
    expect(overdue.status).toBe(403)
    expect(overdue.body).toMatchObject({
      error: {
        code: 'AccountOverdueError',
        type: 'Forbidden',
        message: expect.stringMatching(
          /^The request failed because your account has an overdue balance\. Request ID: /,
        ),
      },
    })
  })

  it('anthropicErrors.requestTooLarge: 413 request_too_large', () => {
    const r = anthropicErrors.requestTooLarge()
    expect(r.status).toBe(413)
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'request_too_large' } })
  })

  it('geminiErrors.contextTooLong and invalidApiKey: both 400 INVALID_ARGUMENT', () => {
    expect(geminiErrors.contextTooLong({ tokens: 1_300_000, limit: 1_048_575 }).body).toEqual({
      error: {
        code: 400,
        message:
          'The input token count (1300000) exceeds the maximum number of tokens allowed (1048575).',
        status: 'INVALID_ARGUMENT',
      },
    })
    const bad = geminiErrors.invalidApiKey()
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({
      error: {
        status: 'INVALID_ARGUMENT',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID' },
        ],
      },
    })
  })

  it('anthropicErrors.usageLimitReached and organizationDisabled: 400 invalid_request_error, verbatim', () => {
    // anthropics/claude-code#38035 and #2127; #19028 and #72457.
    expect(anthropicErrors.usageLimitReached()).toMatchObject({
      status: 400,
      body: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.',
        },
      },
    })
    expect(anthropicErrors.organizationDisabled()).toMatchObject({
      status: 400,
      body: {
        error: { type: 'invalid_request_error', message: 'This organization has been disabled.' },
      },
    })
  })

  it('geminiErrors.prepaymentDepleted (429 RESOURCE_EXHAUSTED, no details) and freeTierUnavailable (400 FAILED_PRECONDITION)', () => {
    // discuss.ai.google.dev/t/170539; ai.google.dev/gemini-api/docs/troubleshooting.
    expect(geminiErrors.prepaymentDepleted()).toMatchObject({
      status: 429,
      body: {
        error: {
          code: 429,
          status: 'RESOURCE_EXHAUSTED',
          message: expect.stringMatching(/^Your prepayment credits are depleted\./),
        },
      },
    })
    expect((geminiErrors.prepaymentDepleted().body as { error: object }).error).not.toHaveProperty(
      'details',
    )
    expect(geminiErrors.freeTierUnavailable()).toMatchObject({
      status: 400,
      body: { error: { code: 400, status: 'FAILED_PRECONDITION' } },
    })
  })
})

describe('Anthropic stream usage', () => {
  it('message_delta carries the cumulative usage, input counts repeated, as the API sends it today', async () => {
    // A captured stream (vercel/ai, @ai-sdk/anthropic fixture
    // anthropic-json-tool.1.chunks.txt) ends `"usage":{"input_tokens":849,
    // "cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":47}`.
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('one two', { usage: { inputTokens: 849, outputTokens: 47 } }),
    })
    const res = await fetch(`${fake.baseURL}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': 'k',
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        model: 'm',
        max_tokens: 9,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    })
    const events = (await readSse(res)).events.map((e) => JSON.parse(e.data) as { type: string })
    expect(events.find((e) => e.type === 'message_delta')).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: {
        input_tokens: 849,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 47,
      },
    })
    expect(events[0]).toMatchObject({
      message: { usage: { input_tokens: 849, service_tier: 'standard', cache_creation: {} } },
    })
  })
})

describe('OpenAI rate-limit headers', () => {
  it('x-ratelimit-reset-requests is a Go duration, as OpenAI writes it (1m30s, not 90s)', () => {
    // platform.openai.com/docs/guides/rate-limits: `x-ratelimit-reset-tokens: 6m0s`.
    const reset = (retryAfterS: number) =>
      openAIErrors.rateLimited({ retryAfterS }).headers?.['x-ratelimit-reset-requests']
    expect([reset(1), reset(20), reset(90), reset(360), reset(3725), reset(0.12)]).toEqual([
      '1s',
      '20s',
      '1m30s',
      '6m0s',
      '1h2m5s',
      '120ms',
    ])
  })

  it('the message\'s "Please try again in …" names the wait the reset header names', () => {
    for (const options of [
      {},
      { retryAfterS: 20 },
      { retryAfterS: 90, limit: 'tokens' as const },
      // `retry-after-ms` alone: the reset and the message name its wait, not a second.
      { retryAfterMs: 200 },
    ]) {
      const reply = openAIErrors.rateLimited(options)
      const message = (reply.body as { error: { message: string } }).error.message
      // The spent limit's reset: both sets are sent, the other with room.
      const reset =
        reply.headers?.[
          options.limit === 'tokens' ? 'x-ratelimit-reset-tokens' : 'x-ratelimit-reset-requests'
        ]
      expect(message).toContain(`Please try again in ${reset}.`)
    }
    expect(openAIErrors.rateLimited({ retryAfterMs: 200 }).headers).toMatchObject({
      'retry-after-ms': '200',
      'x-ratelimit-reset-requests': '200ms',
    })
  })
})

describe('tool settings without tools', () => {
  // Each real API refuses a tool choice (or OpenAI's parallel_tool_calls, or
  // Gemini's function-calling config) sent without a tool to choose from: a
  // 400 in its own error shape. The fakes answered 200, so a client that
  // sent one passed its tests and failed against the provider.
  const base = { messages: [{ role: 'user', content: 'hi' }] }
  const cases: [string, ProviderDialect, string, Record<string, unknown>, unknown][] = [
    [
      'OpenAI tool_choice',
      'openai',
      '/chat/completions',
      { model: 'm', ...base, tool_choice: 'none' },
      {
        error: {
          message:
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
          type: 'invalid_request_error',
          param: 'tool_choice',
          code: null,
        },
      },
    ],
    [
      'OpenAI parallel_tool_calls',
      'openai',
      '/chat/completions',
      { model: 'm', ...base, parallel_tool_calls: false },
      {
        error: {
          message:
            "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
          type: 'invalid_request_error',
          param: 'parallel_tool_calls',
          code: null,
        },
      },
    ],
    // An empty list is refused on its own, before any tool setting is read,
    // naming `tools` (openai-python's BadRequestError as quoted in
    // speaches-ai/speaches src/speaches/realtime/chat_utils.py; the same
    // `empty_array` shape for `messages[i].tool_calls` in chatboxai/chatbox#2079).
    [
      'OpenAI tools: [] with tool_choice',
      'openai',
      '/chat/completions',
      { model: 'm', ...base, tools: [], tool_choice: 'auto' },
      {
        error: {
          message:
            "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
          type: 'invalid_request_error',
          param: 'tools',
          code: 'empty_array',
        },
      },
    ],
    [
      'OpenAI tools: [] alone',
      'openai',
      '/chat/completions',
      { model: 'm', ...base, tools: [] },
      {
        error: {
          message:
            "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
          type: 'invalid_request_error',
          param: 'tools',
          code: 'empty_array',
        },
      },
    ],
    [
      'Anthropic tool_choice',
      'anthropic',
      '/messages',
      { model: 'm', max_tokens: 8, ...base, tool_choice: { type: 'auto' } },
      {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'tool_choice may only be specified while providing tools.',
        },
      },
    ],
    [
      'Gemini toolConfig',
      'gemini',
      '/models/gemini-2.5-flash:generateContent',
      {
        contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
        toolConfig: { functionCallingConfig: { mode: 'NONE' } },
      },
      {
        error: {
          code: 400,
          message: 'Function calling config is set without function_declarations.',
          status: 'INVALID_ARGUMENT',
        },
      },
    ],
  ]
  it.each(cases)(
    '%s without tools is a 400 in the API’s own shape',
    async (_, dialect, path, body, said) => {
      fake = await startFakeProvider({ dialect, reply: reply.text('ok') })
      const res = await fetch(`${fake.baseURL}${path}`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer sk-test',
          'anthropic-version': '2023-06-01',
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
      })
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject(said as object)
      expect(fake.requests[0]?.outcome).toBe('error')
      expect(fake.paidGenerations).toBe(0)
    },
  )

  it('the same settings with tools are answered', async () => {
    fake = await startFakeProvider({ reply: reply.text('ok') })
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }]
    const res = await chat(fake.baseURL, { tools, tool_choice: 'auto', parallel_tool_calls: false })
    expect(res.status).toBe(200)
  })
})
