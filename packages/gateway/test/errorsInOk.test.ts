import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ernieErrors, type FakeProvider, qwenErrors, reply } from '@hourglass/testkit'
import { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

describe('an error hidden in an HTTP 200 is never an empty success', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  /** qwen → ernie → openai, in that priority. */
  async function threeProviders(policy: Record<string, unknown> = {}) {
    const qwen = await fakeProvider('qwen', ['qwen-key-1', 'qwen-key-2'])
    const ernie = await fakeProvider('ernie', ['ernie-key-1'])
    const openai = await fakeProvider('openai', ['openai-key-1'])
    fakes.push(qwen.fake, ernie.fake, openai.fake)
    harness = await startHarness(
      {
        providers: { qwen: qwen.entry, ernie: ernie.entry, openai: openai.entry },
        models: {
          chat: fallback(['qwen', 'qwen-plus'], ['ernie', 'ernie-4.0'], ['openai', 'gpt-4o-mini']),
        },
        policy,
      },
      // Every attempt's line, the answering one's too (debug).
      { logLevel: 'debug' },
    )
    return { qwen: qwen.fake, ernie: ernie.fake, openai: openai.fake }
  }

  it('a Qwen throttling code in a 200 body and an ERNIE 336501 in a 200 body fail over to the next provider', async () => {
    const { qwen, ernie, openai } = await threeProviders({ maxAttempts: 1 })
    qwen.enqueue(qwenErrors.throttlingIn200('Throttling.RateQuota'))
    ernie.enqueue(ernieErrors.rateLimited('rpm'))
    openai.enqueue(reply.text('the real answer'))
    const completion = await harness!.client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(completion.choices[0]?.message.content).toBe('the real answer')
    expect(qwen.requests.map((r) => r.outcome)).toEqual(['error'])
    expect(ernie.requests.map((r) => r.outcome)).toEqual(['error'])
    expect(openai.requests.map((r) => r.outcome)).toEqual(['success'])
    expect(
      harness!.logs.filter((l) => l.event === 'attempt').map((l) => [l['provider'], l['decision']]),
    ).toEqual([
      ['qwen', 'fallback'],
      ['ernie', 'fallback'],
      ['openai', 'success'],
    ])
  })

  it('a 200-with-error body is retried on the same provider when attempts remain (with the next key)', async () => {
    const { qwen, openai } = await threeProviders({ maxAttempts: 2 })
    qwen.enqueue(
      qwenErrors.throttlingIn200('Throttling.AllocationQuota'),
      reply.text('qwen, second time'),
    )
    const completion = await harness!.client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(completion.choices[0]?.message.content).toBe('qwen, second time')
    expect(qwen.requests.map((r) => [r.outcome, r.apiKey])).toEqual([
      ['error', 'qwen-key-1'],
      ['success', 'qwen-key-2'],
    ])
    expect(openai.requests).toHaveLength(0)
  })

  it('a stream whose first frame is an error event falls back before anything reaches the client', async () => {
    const { qwen, ernie, openai } = await threeProviders({ maxAttempts: 1 })
    qwen.enqueue(qwenErrors.throttlingInStream({ afterTokens: 0 }))
    ernie.enqueue(ernieErrors.rateLimited('tpm'))
    openai.enqueue(reply.text('streamed from the third provider'))
    const stream = await harness!.client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('streamed from the third provider')
    expect(qwen.requests.map((r) => r.outcome)).toEqual(['stream-error'])
    expect(ernie.requests.map((r) => r.outcome)).toEqual(['error'])
  })

  it('when every provider hides a rate limit in a 200, the client gets a 429 error, not an empty answer', async () => {
    for (const stream of [false, true]) {
      // A fresh gateway each time: the first call's cooldowns must not decide the second.
      const { qwen, ernie, openai } = await threeProviders({ maxAttempts: 1 })
      qwen.setReply(qwenErrors.throttlingIn200())
      ernie.setReply(ernieErrors.rateLimited('rpm'))
      openai.setReply(
        reply.error(200, {
          error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
        }),
      )
      const error = await harness!.client.chat.completions
        .create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], stream })
        .then(
          async (result) => {
            // A stream only fails when read; it must fail before yielding any text.
            if (stream)
              for await (const _ of result as AsyncIterable<unknown>) throw new Error('got a chunk')
            return result
          },
          (e: unknown) => e,
        )
      expect(error, `stream: ${stream}`).toBeInstanceOf(APIError)
      expect((error as APIError).status, `stream: ${stream}`).toBe(429)
      expect((error as APIError).code).toBe('rate_limit_exceeded')
      // Each provider was asked once and answered its 200-with-error (JSON even when a stream was asked for).
      expect([qwen, ernie, openai].map((f) => f.requests.map((r) => r.outcome))).toEqual([
        ['error'],
        ['error'],
        ['error'],
      ])
      await harness!.close()
      await Promise.all(fakes.map((f) => f.close()))
      harness = undefined
      fakes = []
    }
  })

  it('once every key is cooling past the deadline, the next request is refused at once with 429 and Retry-After, sending nothing', async () => {
    const { qwen, ernie, openai } = await threeProviders({ maxAttempts: 1 })
    // Each limit names a 30 s wait, so nothing cools down during the test.
    const wait30s = { 'retry-after': '30' }
    qwen.setReply({ ...qwenErrors.throttlingIn200(), headers: wait30s })
    ernie.setReply({ ...ernieErrors.rateLimited('rpm'), headers: wait30s })
    openai.setReply(
      reply.error(
        429,
        { error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } },
        { 'retry-after': '30' },
      ),
    )
    const within = (ms: number) => ({ headers: { 'x-deadline-remaining-ms': String(ms) } })
    const ask = (content: string, ms: number) =>
      harness!.client.chat.completions.create(
        { model: 'chat', messages: [{ role: 'user', content }] },
        within(ms),
      )
    // Two requests meet every key's limit (the second takes qwen's second key).
    await expect(ask('a', 3000)).rejects.toMatchObject({ status: 429 })
    await expect(ask('b', 3000)).rejects.toMatchObject({ status: 429 })
    const sent = qwen.requests.length + ernie.requests.length + openai.requests.length
    expect(qwen.requests.map((r) => r.apiKey)).toEqual(['qwen-key-1', 'qwen-key-2'])

    // 3 s, as the two above: the 30 s cooldowns fit it no better than 500 ms,
    // and 500 ms less the ingress reserve (adaptive, up to 100 ms on a loaded
    // box) and the reply reserve (25) left ~375 ms, which one stall of the
    // process before admission decided spent: a 504, not the 429.
    const res = await fetch(`${harness!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '3000' },
      body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'c' }] }),
    })
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(Number(res.headers.get('retry-after-ms'))).toBeGreaterThan(0)
    expect(await res.json()).toMatchObject({
      error: { code: 'rate_limit_exceeded', type: 'requests' },
    })
    expect(qwen.requests.length + ernie.requests.length + openai.requests.length).toBe(sent)
  })

  it('an answer the provider ended in an error (DeepSeek insufficient_system_resource: cut short) is no complete answer: 502 whole, an error event streamed, never finish_reason stop', async () => {
    // What DeepSeek sends when it runs out of capacity mid-answer: the text
    // so far, then a finish reason of its own (the fakes script OpenAI's only).
    const chunk = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'deepseek-chat', choices: [{ index: 0, delta, finish_reason: finish }], usage: finish === null ? null : { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } })}\n\n`
    const deepseek = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => {
        body += c
      })
      req.on('end', () => {
        if ((JSON.parse(body) as { stream?: boolean }).stream === true) {
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          res.write(chunk({ role: 'assistant', content: 'The answer is' }, null))
          res.end(`${chunk({}, 'insufficient_system_resource')}data: [DONE]\n\n`)
          return
        }
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            created: 1,
            model: 'deepseek-chat',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: 'The answer is' },
                finish_reason: 'insufficient_system_resource',
              },
            ],
            usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
          }),
        )
      })
    })
    await new Promise<void>((resolve) => deepseek.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = deepseek.address() as AddressInfo
      harness = await startHarness({
        providers: {
          deepseek: { dialect: 'deepseek', baseURL: `http://127.0.0.1:${port}`, apiKeys: ['k'] },
        },
        models: { chat: fallback(['deepseek', 'deepseek-chat']) },
        // One attempt: the retry's backoff (~1 s of real time) is not what this tests.
        policy: { maxAttempts: 1 },
      })
      const ask = { model: 'chat', messages: [{ role: 'user' as const, content: 'q' }] }
      const whole = await harness.client.chat.completions.create(ask).then(
        (answer) => `200 finish_reason ${answer.choices[0]?.finish_reason}`,
        (e: APIError) => `${e.status} ${e.code}`,
      )
      expect(whole).toBe('502 upstream_error')
      const text: string[] = []
      const streamed = await (async () => {
        const stream = await harness!.client.chat.completions.create({ ...ask, stream: true })
        for await (const c of stream) {
          text.push(c.choices[0]?.delta.content ?? '')
          if (c.choices[0]?.finish_reason) return `finish_reason ${c.choices[0].finish_reason}`
        }
        return 'ended'
      })().catch((e: APIError) => `${e.constructor.name} ${e.code}: ${e.message}`)
      // DeepSeek's own finish reason is named: a capacity cut, which a retry
      // may mend, told from a malformed tool call (it read "cut short by the
      // provider, or a malformed tool call" for both).
      expect(streamed).toBe(
        'APIError stream_interrupted: deepseek/deepseek-chat: the answer ended in an error (finish reason "insufficient_system_resource"); not a complete answer',
      )
      expect(text.join('')).toBe('The answer is')
    } finally {
      await new Promise((resolve) => deepseek.close(resolve))
    }
  })

  it('an answer that ended in an error before anything reached the client goes to the fallback the config lists, whole and streamed', async () => {
    // DeepSeek out of capacity before its first token: a finish reason of its own, no text.
    const ended = {
      id: 'x',
      object: 'chat.completion',
      created: 1,
      model: 'deepseek-chat',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: '' },
          finish_reason: 'insufficient_system_resource',
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 0, total_tokens: 5 },
    }
    const endedStream = [
      {
        ...ended,
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
        usage: null,
      },
      {
        ...ended,
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: {}, finish_reason: 'insufficient_system_resource' }],
      },
    ]
      .map((c) => `data: ${JSON.stringify(c)}\n\n`)
      .join('')
    const deepseek = await fakeProvider('deepseek', ['ds-key'])
    const backup = await fakeProvider('openai', ['oa-key'])
    fakes.push(deepseek.fake, backup.fake)
    deepseek.fake.enqueue(reply.error(200, ended))
    deepseek.fake.enqueue(
      reply.error(200, `${endedStream}data: [DONE]\n\n`, { 'content-type': 'text/event-stream' }),
    )
    backup.fake.setReply(reply.text('from the fallback'))
    harness = await startHarness(
      {
        providers: { deepseek: deepseek.entry, backup: backup.entry },
        models: { chat: fallback(['deepseek', 'deepseek-chat'], ['backup', 'gpt-4o-mini']) },
        policy: { maxAttempts: 1 },
      },
      { logLevel: 'debug' },
    )
    const ask = { model: 'chat', messages: [{ role: 'user' as const, content: 'q' }] }
    const whole = await harness.client.chat.completions.create(ask).then(
      (answer) => `200 ${answer.choices[0]?.message.content}`,
      (e: APIError) => `${e.status} ${e.code}`,
    )
    expect(whole, 'the whole answer').toBe('200 from the fallback')
    const stream = await harness.client.chat.completions.create({ ...ask, stream: true })
    let text = ''
    for await (const c of stream) text += c.choices[0]?.delta.content ?? ''
    expect(text, 'the streamed answer').toBe('from the fallback')
    const decisions = harness.logs
      .filter((l) => l.event === 'attempt')
      .map((l) => `${l['provider']} ${l['decision']}`)
    expect(decisions).toEqual([
      'deepseek fallback',
      'backup success',
      'deepseek fallback',
      'backup success',
    ])
  })
})
