import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type FakeProvider,
  openAIErrors,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const chat = (base: string, body: Record<string, unknown>, key = 'sk-test-123') =>
  fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      ...body,
    }),
  })

describe('fake OpenAI chat completions', () => {
  it('answers a non-streamed request with a chat.completion JSON and records what it received', async () => {
    fake = await startFakeProvider({
      reply: reply.text('Hello there, world.', { usage: { inputTokens: 9 } }),
    })
    const res = await chat(fake.baseURL, { temperature: 0.2 })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json')
    expect(res.headers.get('x-request-id')).toMatch(/^req_chatcmpl-/)
    const body = (await res.json()) as Record<string, unknown>
    expect(body).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-4o-mini',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello there, world.' },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 },
    })
    expect(body['id']).toMatch(/^chatcmpl-/)
    const [request] = fake.requests
    expect(request).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      route: 'openai-chat',
      model: 'gpt-4o-mini',
      stream: false,
      apiKey: 'sk-test-123',
      outcome: 'success',
      paid: true,
      body: { temperature: 0.2 },
    })
    expect(request!.headers['content-type']).toBe('application/json')
  })

  it('streams data: chunks — role first, content deltas, finish_reason, a usage chunk when asked, then [DONE]', async () => {
    fake = await startFakeProvider({ reply: reply.text('One two three') })
    const res = await chat(fake.baseURL, { stream: true, stream_options: { include_usage: true } })
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const stream = await readSse(res)
    expect(stream.error).toBeUndefined()
    expect(stream.raw.endsWith('data: [DONE]\n\n')).toBe(true)
    expect(
      stream.raw
        .split('\n\n')
        .filter(Boolean)
        .every((f) => f.startsWith('data: ')),
    ).toBe(true)
    const chunks = dataOf<{
      object: string
      choices: { delta: Record<string, unknown>; finish_reason: string | null }[]
      usage?: unknown
    }>(stream)
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true)
    // OpenAI's first delta carries `refusal: null` (see chunkDeltas.test.ts).
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '', refusal: null })
    const text = chunks.map((c) => c.choices[0]?.delta['content'] ?? '').join('')
    expect(text).toBe('One two three')
    expect(
      chunks.filter(
        (c) =>
          typeof c.choices[0]?.delta['content'] === 'string' &&
          c.choices[0]!.delta['content'] !== '',
      ),
    ).toHaveLength(3)
    const finish = chunks.at(-2)!
    expect(finish.choices[0]!.finish_reason).toBe('stop')
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 3 } })
    expect(stream.events.at(-1)!.data).toBe('[DONE]')
  })

  it('streams tool calls as an id+name chunk followed by argument pieces', async () => {
    fake = await startFakeProvider({
      reply: {
        kind: 'text',
        toolCalls: [{ id: 'call_1', name: 'send_email', arguments: { to: 'a@b.c', body: 'hi' } }],
      },
    })
    const stream = await readSse(await chat(fake.baseURL, { stream: true }))
    const deltas = dataOf<{
      choices: {
        delta: { tool_calls?: { function: { name?: string; arguments: string } }[] }
        finish_reason: string | null
      }[]
    }>(stream)
    const calls = deltas.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
    expect(calls[0]).toMatchObject({
      id: 'call_1',
      type: 'function',
      function: { name: 'send_email', arguments: '' },
    })
    expect(JSON.parse(calls.map((c) => c.function.arguments).join(''))).toEqual({
      to: 'a@b.c',
      body: 'hi',
    })
    expect(deltas.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls')
    const json = (await (await chat(fake.baseURL, {})).json()) as {
      choices: { message: { content: unknown; tool_calls: unknown[] } }[]
    }
    expect(json.choices[0]!.message.content).toBeNull()
    expect(json.choices[0]!.message.tool_calls).toEqual([
      {
        id: 'call_1',
        type: 'function',
        function: { name: 'send_email', arguments: '{"to":"a@b.c","body":"hi"}' },
      },
    ])
  })

  it('sends : keep-alive comments while the first token is delayed, all before the first token', async () => {
    fake = await startFakeProvider({
      reply: reply.text('late', { firstTokenDelayMs: 300, keepAliveEveryMs: 50 }),
    })
    const stream = await readSse(await chat(fake.baseURL, { stream: true }))
    expect(stream.comments.filter((c) => c.trim() === 'keep-alive').length).toBeGreaterThanOrEqual(
      3,
    )
    expect(stream.raw.indexOf(': keep-alive\n\n')).toBeLessThan(
      stream.raw.indexOf('"content":"late"'),
    )
    const lastKeepAlive = stream.raw.lastIndexOf(': keep-alive\n\n')
    expect(lastKeepAlive).toBeLessThan(stream.raw.indexOf('"content":"late"'))
  })

  it('holds the first token back by firstTokenDelayMs', async () => {
    fake = await startFakeProvider({ reply: reply.text('x', { firstTokenDelayMs: 250 }) })
    // Measured from the request: a busy client can only make the wait look longer.
    const sentAt = performance.now()
    const res = await chat(fake.baseURL, { stream: true })
    expect(res.status).toBe(200)
    const stream = await readSse(res)
    expect(performance.now() - sentAt).toBeGreaterThanOrEqual(240)
    expect(stream.raw).toContain('"content":"x"')
  })

  it('splitBytes cuts multi-byte UTF-8 characters across writes; the bytes still join to the exact text', async () => {
    const text = '你好，世界！🌏 深度求索与通义千问。'.repeat(2)
    // Pieces of 2 bytes cut every 3- and 4-byte character wherever it falls in
    // its frame; with 7 the cuts hung on the chunk's length before the
    // content (one more field in it, `service_tier`, and no character was cut).
    fake = await startFakeProvider({ reply: reply.text(text, { splitBytes: 2 }) })
    const stream = await readSse(await chat(fake.baseURL, { stream: true }))
    const fatal = new TextDecoder('utf-8', { fatal: true })
    const undecodable = stream.chunks.filter((chunk) => {
      try {
        fatal.decode(chunk)
        return false
      } catch {
        return true
      }
    })
    // Some chunk arrived ending (or starting) inside a character…
    expect(undecodable.length).toBeGreaterThan(0)
    // …and the whole, decoded by one streaming decoder, is intact.
    expect(stream.raw).not.toContain('\uFFFD')
    const content = dataOf<{ choices: { delta: { content?: string } }[] }>(stream)
      .map((c) => c.choices[0]?.delta.content ?? '')
      .join('')
    expect(content).toBe(text)
  })

  it('cutAfterTokens breaks the connection after N tokens: the client sees an error, the fake counts a paid generation', async () => {
    fake = await startFakeProvider({ reply: reply.text('a b c d e f g', { cutAfterTokens: 2 }) })
    const stream = await readSse(await chat(fake.baseURL, { stream: true }))
    expect(stream.error).toBeDefined()
    const content = dataOf<{ choices: { delta: { content?: string } }[] }>(stream)
      .map((c) => c.choices[0]?.delta.content ?? '')
      .join('')
    expect(content).toBe('a b')
    expect(stream.raw).not.toContain('[DONE]')
    expect(fake.requests[0]).toMatchObject({ outcome: 'cut', tokensSent: 2, paid: true })
    expect(fake.paidGenerations).toBe(1)
  })

  it('a hung request gets nothing until the client gives up; it is not a paid generation', async () => {
    fake = await startFakeProvider({ reply: reply.hang() })
    const controller = new AbortController()
    const pending = chat(fake.baseURL, {}).catch((e: unknown) => e)
    const aborted = fetch(`${fake.baseURL}/chat/completions`, {
      method: 'POST',
      body: '{}',
      signal: controller.signal,
    }).catch((e: unknown) => e)
    await fake.waitForRequests(2)
    controller.abort()
    expect(await aborted).toMatchObject({ name: 'AbortError' })
    expect(fake.requests.map((r) => r.outcome)).toEqual(['hang', 'hang'])
    expect(fake.paidGenerations).toBe(0)
    await fake.close()
    expect(await pending).toBeInstanceOf(Error)
    fake = undefined
  })

  it('a hang after headers sends a 200 event stream and then only keep-alives, never a token', async () => {
    fake = await startFakeProvider({
      reply: reply.hang({ afterHeaders: true, keepAliveEveryMs: 20 }),
    })
    const res = await chat(fake.baseURL, { stream: true })
    expect(res.status).toBe(200)
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let seen = ''
    while ((seen.match(/: keep-alive/g) ?? []).length < 3) {
      const { value } = await reader.read()
      seen += decoder.decode(value, { stream: true })
    }
    expect(seen).toBe(': keep-alive\n\n'.repeat(seen.length / ': keep-alive\n\n'.length))
    await reader.cancel()
    expect(fake.paidGenerations).toBe(0)
  })

  it('scripted errors go out verbatim: 429 with retry-after, retry-after-ms and x-ratelimit reset headers', async () => {
    fake = await startFakeProvider()
    fake.enqueue(
      openAIErrors.rateLimited({ retryAfterS: 1, retryAfterMs: 750 }),
      openAIErrors.serverError({ shouldRetry: false }),
    )
    const limited = await chat(fake.baseURL, {})
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('1')
    expect(limited.headers.get('retry-after-ms')).toBe('750')
    expect(limited.headers.get('x-ratelimit-reset-requests')).toBe('1s')
    expect(await limited.json()).toMatchObject({
      error: { type: 'requests', code: 'rate_limit_exceeded', param: null },
    })
    const failed = await chat(fake.baseURL, {})
    expect(failed.status).toBe(500)
    expect(failed.headers.get('x-should-retry')).toBe('false')
    expect(await failed.json()).toMatchObject({ error: { type: 'server_error' } })
    const ok = await chat(fake.baseURL, {})
    expect(ok.status).toBe(200)
    expect(fake.requests.map((r) => r.reply)).toEqual(['error', 'error', 'text'])
    expect(fake.paidGenerations).toBe(1)
  })

  it('insufficient_quota is a 429 with its own code (a permanent one)', async () => {
    fake = await startFakeProvider({ reply: openAIErrors.insufficientQuota() })
    const res = await chat(fake.baseURL, {})
    expect(res.status).toBe(429)
    expect(await res.json()).toMatchObject({
      error: { type: 'insufficient_quota', code: 'insufficient_quota' },
    })
  })

  it('a rate-limit window answers 429 with retry-after for its duration, then the queue resumes', async () => {
    const clock = new ManualClock()
    fake = await startFakeProvider({ clock })
    fake.enqueue(reply.text('first real answer'))
    fake.rateLimit({ forMs: 2000 })
    const during = await Promise.all([chat(fake.baseURL, {}), chat(fake.baseURL, {})])
    expect(during.map((r) => r.status)).toEqual([429, 429])
    expect(during[0]!.headers.get('retry-after')).toBe('2')
    clock.advance(1999)
    expect((await chat(fake.baseURL, {})).status).toBe(429)
    clock.advance(1)
    const after = await chat(fake.baseURL, {})
    expect(after.status).toBe(200)
    expect(
      ((await after.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message
        .content,
    ).toBe('first real answer')
    expect(fake.requests.map((r) => r.reply)).toEqual([
      'rate-limit',
      'rate-limit',
      'rate-limit',
      'text',
    ])
    expect(fake.requests.map((r) => r.receivedAtMs)).toEqual([0, 0, 1999, 2000])
  })

  it('a reply function decides per request, e.g. by API key', async () => {
    fake = await startFakeProvider({
      reply: (request) =>
        request.apiKey === 'sk-bad'
          ? openAIErrors.authentication()
          : reply.text(`hi ${request.index}`),
    })
    expect((await chat(fake.baseURL, {}, 'sk-bad')).status).toBe(401)
    expect((await chat(fake.baseURL, {}, 'sk-good')).status).toBe(200)
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-bad', 'sk-good'])
  })

  it('lists models and answers unknown paths with a 404', async () => {
    fake = await startFakeProvider({ models: ['gpt-4o-mini', 'gpt-4o'] })
    const models = await fetch(`${fake.baseURL}/models`, { headers: { authorization: 'Bearer k' } })
    expect(await models.json()).toMatchObject({
      object: 'list',
      data: [{ id: 'gpt-4o-mini', object: 'model' }, { id: 'gpt-4o' }],
    })
    const missing = await fetch(`${fake.url}/nope`, { method: 'POST', body: '{}' })
    expect(missing.status).toBe(404)
    // OpenAI's own answer to a path it has not (code null).
    expect(await missing.json()).toEqual({
      error: {
        message: 'Invalid URL (POST /nope)',
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    })
  })

  it('reset() forgets requests, queue and windows', async () => {
    fake = await startFakeProvider()
    fake.enqueue(openAIErrors.badRequest()).rateLimit({ forMs: 60_000 })
    await chat(fake.baseURL, {})
    fake.reset()
    expect(fake.requests).toHaveLength(0)
    expect(fake.queuedReplies).toBe(0)
    expect((await chat(fake.baseURL, {})).status).toBe(200)
  })

  // A script held on a gate the test opens later: the request stayed in
  // flight after its client had left, and a leak check failed on a client
  // that had let go.
  it('a script still choosing when its client leaves is no longer in flight', async () => {
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    fake = await startFakeProvider({ reply: () => gate.then(() => reply.text('late')) })
    const left = new AbortController()
    const call = fetch(`${fake.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      signal: left.signal,
    })
    await fake.waitForRequests(1)
    left.abort()
    await expect(call).rejects.toThrow()
    await expect.poll(() => fake?.inFlight).toBe(0)
    expect(fake.requests[0]?.outcome).toBe('client-closed')
    open()
  })

  // close() lets it go before its socket closes: its record said 'pending' for good.
  it.each([
    ['a script still choosing', () => new Promise<never>(() => {})],
    ['a reply in its latency', () => reply.text('late', { latencyMs: 60_000 })],
  ] as const)(
    '%s when the fake closes is recorded client-closed, not pending',
    async (_what, script) => {
      fake = await startFakeProvider({ reply: script, clock: new ManualClock() })
      const call = fetch(`${fake.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      }).catch(() => undefined)
      await fake.waitForRequests(1)
      await fake.close()
      await call
      expect(fake.inFlight).toBe(0)
      expect(fake.requests[0]?.outcome).toBe('client-closed')
    },
  )

  // afterEach(() => fake.reset()) with one fake for the file: a test that
  // scripted an outage with setReply left every later test answered 500.
  it('reset() forgets a setReply reply: the fake answers as it started', async () => {
    fake = await startFakeProvider({ reply: reply.text('Started with this.') })
    fake.setReply(openAIErrors.serverError())
    expect((await chat(fake.baseURL, {})).status).toBe(500)
    fake.reset()
    const res = await chat(fake.baseURL, {})
    expect(res.status).toBe(200)
    const body = (await res.json()) as { choices: { message: { content: string } }[] }
    expect(body.choices[0]?.message.content).toBe('Started with this.')
  })

  // The API reference's chat completion object: both detail objects, zeros
  // included, whether or not anything was cached or reasoned; the usage chunk
  // of a stream carries the same `CompletionUsage`. A client that read
  // `usage.prompt_tokens_details.cached_tokens` without `?.` passed against
  // the fake and still works against OpenAI; one that treated a missing
  // object as "not reported" saw the fake disagree with the API.
  it('reports usage details as OpenAI does, zeros included, whole and streamed', async () => {
    fake = await startFakeProvider({
      reply: reply.text('One two', { thinking: 'Hmm', usage: { inputTokens: 10 } }),
    })
    const details = {
      prompt_tokens: 10,
      completion_tokens: 3,
      total_tokens: 13,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 1,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    }
    expect(((await (await chat(fake.baseURL, {})).json()) as { usage: unknown }).usage).toEqual(
      details,
    )
    const chunks = dataOf<{ usage?: unknown }>(
      await readSse(
        await chat(fake.baseURL, { stream: true, stream_options: { include_usage: true } }),
      ),
    )
    expect(chunks.at(-1)!.usage).toEqual(details)
  })

  // GPT-5.6 and later report cache writes beside the reads
  // (PromptTokensDetails.cache_write_tokens, openai-node 6.49); the fake
  // left a reply's cacheCreationInputTokens out of every OpenAI answer.
  it('reports the part of prompt_tokens written to the cache when a reply says so, whole and streamed', async () => {
    fake = await startFakeProvider({
      reply: reply.text('ok', { usage: { inputTokens: 100, cacheCreationInputTokens: 80 } }),
    })
    const prompt = { cached_tokens: 0, audio_tokens: 0, cache_write_tokens: 80 }
    expect(
      ((await (await chat(fake.baseURL, {})).json()) as { usage: unknown }).usage,
    ).toMatchObject({ prompt_tokens: 100, prompt_tokens_details: prompt })
    const chunks = dataOf<{ usage?: { prompt_tokens_details?: unknown } }>(
      await readSse(
        await chat(fake.baseURL, { stream: true, stream_options: { include_usage: true } }),
      ),
    )
    expect(chunks.at(-1)!.usage?.prompt_tokens_details).toEqual(prompt)
  })

  it('reports the cached part of prompt_tokens when a reply says so (DeepSeek its hit and miss counts too)', async () => {
    fake = await startFakeProvider({
      reply: reply.text('ok', { usage: { inputTokens: 100, cachedInputTokens: 64 } }),
    })
    expect(((await (await chat(fake.baseURL, {})).json()) as { usage: unknown }).usage).toEqual({
      prompt_tokens: 100,
      completion_tokens: 1,
      total_tokens: 101,
      prompt_tokens_details: { cached_tokens: 64, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    })
    await fake.close()
    fake = await startFakeProvider({
      dialect: 'deepseek',
      reply: reply.text('ok', { usage: { inputTokens: 100, cachedInputTokens: 64 } }),
    })
    expect(
      ((await (await chat(fake.baseURL, {})).json()) as { usage: unknown }).usage,
    ).toMatchObject({
      prompt_tokens: 100,
      prompt_tokens_details: { cached_tokens: 64 },
      prompt_cache_hit_tokens: 64,
      prompt_cache_miss_tokens: 36,
    })
  })
})

describe('a client that leaves mid-stream', () => {
  // 80 replies (two rounds of 40 at once) written a byte at a time, each to
  // a client that reads once and leaves. Before the fix every abandoned
  // reply stayed in flight (200 of 200, commit 261157e), so 80 show it as
  // surely; the 200 it sent before cost ~4 s of CPU, each byte a write.
  // CPU-bound, seconds on a machine loaded as 3–4 CI runs load it: what is
  // tested is that each reply ends, not how fast: a stuck one stays in
  // flight for good, and the bounds here (not the point) only say how long
  // to look.
  it('releases the reply: nothing stays in flight, even when it left during a split multi-byte write', {
    timeout: 120_000,
  }, async () => {
    const text = '你好世界🌍 '.repeat(400)
    fake = await startFakeProvider({ reply: reply.text(text, { splitBytes: 1 }) })
    const provider = fake
    for (let round = 0; round < 2; round++) {
      await Promise.all(
        Array.from({ length: 40 }, async () => {
          const controller = new AbortController()
          const res = await fetch(`${provider.baseURL}/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'm',
              stream: true,
              messages: [{ role: 'user', content: 'hi' }],
            }),
            signal: controller.signal,
          })
          const reader = res.body!.getReader()
          await reader.read()
          controller.abort()
          await reader.closed.catch(() => {})
        }),
      )
    }
    // Every reply notices its client left; none waits on a write that will never complete.
    await expect.poll(() => provider.inFlight, { timeout: 30_000 }).toBe(0)
    expect(provider.requests).toHaveLength(80)
    // Each client left before its answer was written: none ran to its end.
    expect(provider.requests.filter((r) => r.outcome === 'success')).toEqual([])
  })
})
