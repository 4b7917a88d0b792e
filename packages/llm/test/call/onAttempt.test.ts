import diagnostics from 'node:diagnostics_channel'
import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { anthropicErrors, closedPort, openAIErrors, reply } from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { createAdapter } from '../../src/adapters/createAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAttemptMessage, llmChannels } from '../../src/channels.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const published: LlmAttemptMessage[] = []
const listener = (message: unknown) => published.push(message as LlmAttemptMessage)
beforeAll(() => diagnostics.subscribe(llmChannels.attempt.name, listener))
afterAll(() => diagnostics.unsubscribe(llmChannels.attempt.name, listener))
afterEach(() => {
  published.length = 0
})

describe('attempt records', () => {
  it('onAttempt and `hourglass:llm:attempt` describe every attempt: status, class, kind, decision, delay, version, cost, tokens', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      openAIErrors.rateLimited({ retryAfterMs: 30 }),
      reply.text('done', { usage: { inputTokens: 2000, outputTokens: 1000 } }),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini', name: 'oai' }),
    )
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { 'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 } },
    })
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(5000)
    await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 100 },
      promptVersion: 'v7',
      deadline,
      onAttempt: (r) => records.push(r),
      retry: { delay: { hintJitterRatio: 0 } },
      // The records of the policy's own decision: with the shared admission
      // the wait would be the cooldown's remaining time, 30 ms less whatever
      // passed since the 429 (29 ms on a busy machine) — tested elsewhere.
      limits: { budget, admission: false },
    })
    expect(records).toHaveLength(2)
    expect(records[0]).toMatchObject({
      attempt: 1,
      model: 'gpt-4o-mini',
      provider: 'oai',
      status: 429,
      errorClass: 'ProviderError',
      errorKind: 'rate_limited',
      decision: 'retry',
      delayMs: 30,
      promptVersion: 'v7',
      costUsd: 0,
      deadline,
    })
    expect(records[0]?.reason).toMatch(/retry 2 of 3 after 30 ms \(server\)/)
    expect(records[1]).toMatchObject({
      attempt: 2,
      status: 200,
      decision: 'success',
      inputTokens: 2000,
      outputTokens: 1000,
      finishReason: 'stop',
    })
    expect(records[1]?.responseModel).toEqual(expect.any(String))
    expect(records[1]?.costUsd).toBeCloseTo(0.0009, 10)
    expect(records.every((r) => r.latencyMs >= 0)).toBe(true)
    // The diagnostics channel carries the same messages, without the policy's prose.
    expect(published).toHaveLength(2)
    expect(published[0]).toMatchObject({ attempt: 1, decision: 'retry', errorKind: 'rate_limited' })
    expect('reason' in (published[0] as object)).toBe(false)
  })

  it('a network failure is recorded as such, with the transport error’s class', async () => {
    // Refused at connect: nothing was sent, so it is retried (a 200 cut
    // mid-body is not: test/adapters/cutReply.test.ts).
    const port = await closedPort()
    const model = fakes.adapter(
      openAICompatible({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const records: AttemptRecord[] = []
    await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 10 },
      onAttempt: (r) => records.push(r),
      retry: { maxAttempts: 2, delay: { baseDelayMs: 5 } },
    }).catch(() => {})
    expect(records.map((r) => [r.errorKind, r.decision])).toEqual([
      ['network', 'retry'],
      ['network', 'fail'],
    ])
    expect(records[0]?.status).toBe(0)
  })

  describe('an attempt stopped on the caller’s side still has a kind, so a count by kind sees it', () => {
    /** A provider that takes the request and never answers; resolves once it has it. */
    async function hanging() {
      const fake = await fakes.start({ dialect: 'openai', reply: reply.hang() })
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'slow' }),
      )
      return { fake, model }
    }

    it('the deadline ran out during the attempt: `deadline_exceeded`', async () => {
      const { fake, model } = await hanging()
      const clock = new ManualClock()
      using deadline = Deadline.after(60_000, { clock })
      const records: AttemptRecord[] = []
      const call = callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 10 },
        deadline,
        onAttempt: (r) => records.push(r),
      }).catch((e: unknown) => e)
      await fake.waitForRequests(1)
      clock.advance(60_000)
      expect(isDeadlineExceeded(await call)).toBe(true)
      expect(records.map((r) => [r.errorKind, r.decision])).toEqual([['deadline_exceeded', 'fail']])
      expect(published.map((m) => [m.errorKind, m.decision])).toEqual([
        ['deadline_exceeded', 'fail'],
      ])
    })

    it('the caller’s signal aborted the attempt: `aborted`', async () => {
      const { fake, model } = await hanging()
      const controller = new AbortController()
      const reason = new Error('the caller left')
      const records: AttemptRecord[] = []
      const call = callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 10 },
        signal: controller.signal,
        onAttempt: (r) => records.push(r),
      }).catch((e: unknown) => e)
      await fake.waitForRequests(1)
      controller.abort(reason)
      expect(await call).toBe(reason)
      expect(records.map((r) => [r.errorKind, r.errorClass, r.decision])).toEqual([
        ['aborted', 'Error', 'fail'],
      ])
      expect(published.map((m) => m.errorKind)).toEqual(['aborted'])
    })

    it('a stream cancelled during the attempt: `aborted`', async () => {
      const { fake, model } = await hanging()
      const records: AttemptRecord[] = []
      const stream = callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 10, stream: true },
        onAttempt: (r) => records.push(r),
      })
      await fake.waitForRequests(1)
      stream.cancel()
      await expect(stream.result).rejects.toThrow()
      expect(records.map((r) => [r.errorKind, r.decision])).toEqual([['aborted', 'fail']])
    })

    it('a stream broken after its first token keeps the kind of what broke it', async () => {
      const fake = await fakes.start({
        dialect: 'anthropic',
        reply: anthropicErrors.overloadedInStream({ afterTokens: 2 }),
      })
      const model = fakes.adapter(
        anthropic({ baseURL: fake.baseURL, apiKey: 'sk', model: 'claude-haiku-4-5' }),
      )
      const records: AttemptRecord[] = []
      const error = await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 10, stream: true },
        onAttempt: (r) => records.push(r),
      }).result.catch((e: unknown) => e)
      expect(isStreamInterrupted(error)).toBe(true)
      expect(records.map((r) => [r.errorKind, r.errorClass, r.decision])).toEqual([
        ['overloaded', 'StreamInterruptedError', 'fail'],
      ])
    })
  })
})

describe('what an answer said of itself, on its record', () => {
  const prices = { m: { inputPerMTok: 1, outputPerMTok: 1000 } }
  const SSE = { 'content-type': 'text/event-stream' }

  it('an answer that ended in an error: the failed record keeps its finish reason, tokens (it was charged by them), model and id', async () => {
    const fake = await fakes.start({ dialect: 'deepseek' })
    fake.enqueue(
      reply.error(200, {
        id: 'cmpl-err-1',
        object: 'chat.completion',
        model: 'deepseek-chat-0324',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: '' },
            finish_reason: 'insufficient_system_resource',
          },
        ],
        usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
      }),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm', dialect: 'deepseek' }),
    )
    const budget = new CostBudget({ limitUsd: 1, prices })
    const records: AttemptRecord[] = []
    await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      onAttempt: (r) => records.push(r),
      retry: { maxAttempts: 1, budgets: false },
      limits: { budget, admission: false },
    }).catch(() => {})
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({
      decision: 'fail',
      errorKind: 'server_error',
      finishReason: 'error',
      inputTokens: 11,
      outputTokens: 3,
      responseModel: 'deepseek-chat-0324',
      responseId: 'cmpl-err-1',
    })
    expect(records[0]?.costUsd).toBe(budget.spentUsd)
    expect(budget.spentUsd).toBeCloseTo((11 * 1 + 3 * 1000) / 1e6, 10)
  })

  it('a stream whose usage never came: no tokens on the record (not 0), the cost charged by the estimate all the same', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const chunk = (choice: object) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', system_fingerprint: 'fp_1', service_tier: 'default', choices: [{ index: 0, ...choice }] })}\n\n`
    fake.enqueue(
      reply.error(
        200,
        chunk({ delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }) +
          chunk({ delta: {}, finish_reason: 'stop' }) +
          'data: [DONE]\n\n',
        SSE,
      ),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
    )
    const budget = new CostBudget({ limitUsd: 1, prices })
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8, stream: true },
      onAttempt: (r) => records.push(r),
      retry: { budgets: false },
      limits: { budget, admission: false },
    })
    for await (const _ of stream) {
      // read to the end
    }
    expect((await stream.result).text).toBe('Hello')
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({
      decision: 'success',
      finishReason: 'stop',
      responseId: 'c1',
      systemFingerprint: 'fp_1',
      serviceTier: 'default',
    })
    expect(records[0]).not.toHaveProperty('inputTokens')
    expect(records[0]).not.toHaveProperty('outputTokens')
    expect(budget.spentUsd).toBeGreaterThan(0)
    expect(records[0]?.costUsd).toBe(budget.spentUsd)
  })

  // A whole answer with no usage (OpenAI-compatible servers, proxies that strip
  // it, Ollama variants; an Anthropic or Gemini body without its counts).
  const withoutUsage = {
    openai: {
      id: 'c1',
      object: 'chat.completion',
      model: 'm',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' },
      ],
    },
    anthropic: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [{ type: 'text', text: 'Hello' }],
      stop_reason: 'end_turn',
    },
    gemini: {
      responseId: 'g1',
      modelVersion: 'm',
      candidates: [
        { content: { role: 'model', parts: [{ text: 'Hello' }] }, finishReason: 'STOP' },
      ],
    },
  } as const
  for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
    it(`a whole ${dialect} answer without usage: no tokens on the record (not 0), usageReported false, charged by the estimate`, async () => {
      const fake = await fakes.start({ dialect })
      fake.enqueue(reply.error(200, withoutUsage[dialect]))
      const model = fakes.adapterFor(dialect, fake.baseURL, 'm')
      const budget = new CostBudget({ limitUsd: 1, prices })
      const records: AttemptRecord[] = []
      const response = await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 8 },
        onAttempt: (r) => records.push(r),
        retry: { budgets: false },
        limits: { budget, admission: false },
      })
      expect(response.text).toBe('Hello')
      expect(records).toHaveLength(1)
      expect(records[0]).toMatchObject({ decision: 'success', finishReason: 'stop' })
      expect(records[0]).not.toHaveProperty('inputTokens')
      expect(records[0]).not.toHaveProperty('outputTokens')
      expect(published[0]).not.toHaveProperty('inputTokens')
      expect(response.usageReported).toBe(false)
      // The prompt estimate plus ceil(5 / 4) = 2 output tokens at $1000/MTok: not $0.
      expect(budget.spentUsd).toBeGreaterThanOrEqual((2 * 1000) / 1e6)
      expect(records[0]?.costUsd).toBe(budget.spentUsd)
    })
  }

  it('a stream request answered with a whole JSON answer without usage: no tokens on the record either', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.error(200, withoutUsage.openai))
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8, stream: true },
      onAttempt: (r) => records.push(r),
      retry: { budgets: false },
      limits: { admission: false },
    })
    for await (const _ of stream) {
      // read to the end
    }
    expect((await stream.result).text).toBe('Hello')
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'success', finishReason: 'stop' })
    expect(records[0]).not.toHaveProperty('inputTokens')
    expect((await stream.result).usageReported).toBe(false)
  })

  it('a dialect of your own that wraps a built-in parser and fills usage from elsewhere: its counts are believed (record, charge)', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.error(200, { ...withoutUsage.openai, meta: { tokens_in: 11, tokens_out: 3 } }),
    )
    const mine = {
      ...dialects.openai,
      parseResponse(body: unknown, meta: Parameters<typeof dialects.openai.parseResponse>[1]) {
        const parsed = dialects.openai.parseResponse(body, meta)
        const json = (typeof body === 'string' ? JSON.parse(body) : body) as {
          meta: { tokens_in: number; tokens_out: number }
        }
        // The spread copies usageReported: false (the body has no `usage`).
        return {
          ...parsed,
          usage: { inputTokens: json.meta.tokens_in, outputTokens: json.meta.tokens_out },
        }
      },
    }
    const model = fakes.adapter(
      createAdapter(mine, { baseURL: fake.baseURL, apiKey: 'sk-test1234', model: 'm' }),
    )
    const budget = new CostBudget({ limitUsd: 1, prices })
    const records: AttemptRecord[] = []
    await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      onAttempt: (r) => records.push(r),
      retry: { budgets: false },
      limits: { budget, admission: false },
    })
    expect(records[0]).toMatchObject({ inputTokens: 11, outputTokens: 3 })
    expect(budget.spentUsd).toBeCloseTo((11 * 1 + 3 * 1000) / 1e6, 10)
  })

  it('a stream request answered with a whole JSON answer keeps what it said of itself (fingerprint, tier)', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.error(200, {
        ...withoutUsage.openai,
        system_fingerprint: 'fp_1',
        service_tier: 'default',
        usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
      }),
    )
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8, stream: true },
      retry: { budgets: false },
      limits: { admission: false },
    })
    for await (const _ of stream) {
      // read to the end
    }
    expect(await stream.result).toMatchObject({ systemFingerprint: 'fp_1', serviceTier: 'default' })
    expect(published[0]).toMatchObject({ systemFingerprint: 'fp_1', serviceTier: 'default' })
  })

  it('a stream whose usage chunk has no counts ({}, total_tokens alone) reports none, as a whole answer does: no tokens on the record', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const chunk = (choice: object, extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: choice === undefined ? [] : [{ index: 0, ...choice }], ...extra })}\n\n`
    fake.enqueue(
      reply.error(
        200,
        chunk({ delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }) +
          chunk({ delta: {}, finish_reason: 'stop' }) +
          `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [], usage: { total_tokens: 14 } })}\n\n` +
          'data: [DONE]\n\n',
        SSE,
      ),
    )
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8, stream: true },
      onAttempt: (r) => records.push(r),
      retry: { budgets: false },
      limits: { admission: false },
    })
    for await (const _ of stream) {
      // read to the end
    }
    expect((await stream.result).usageReported).toBe(false)
    expect(records[0]).not.toHaveProperty('inputTokens')
  })

  it('a whole answer with usage: its tokens on the record, no usageReported', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(
      reply.error(200, {
        ...withoutUsage.anthropic,
        usage: { input_tokens: 7, output_tokens: 2 },
      }),
    )
    const model = fakes.adapterFor('anthropic', fake.baseURL, 'm')
    const records: AttemptRecord[] = []
    const response = await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      onAttempt: (r) => records.push(r),
      retry: { budgets: false },
      limits: { admission: false },
    })
    expect(response).not.toHaveProperty('usageReported')
    expect(records[0]).toMatchObject({ inputTokens: 7, outputTokens: 2 })
  })

  it('a stream cut after its first token whose usage had come: the failed record carries the tokens it was charged by', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const chunk = (choice: object, extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, ...choice }], ...extra })}\n\n`
    // An early finish with its usage, more answer after it (so no whole
    // answer), then an error frame: cut after the first token.
    fake.enqueue(
      reply.error(
        200,
        chunk({ delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }) +
          chunk(
            { delta: {}, finish_reason: 'stop' },
            { usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } },
          ) +
          chunk({ delta: { content: ' more' }, finish_reason: null }) +
          `data: ${JSON.stringify({ error: { message: 'boom', type: 'server_error' } })}\n\n`,
        SSE,
      ),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
    )
    const budget = new CostBudget({ limitUsd: 1, prices })
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8, stream: true },
      onAttempt: (r) => records.push(r),
      retry: { budgets: false },
      limits: { budget, admission: false },
    })
    const error = await (async () => {
      for await (const _ of stream) {
        // read until it breaks
      }
    })().catch((e: unknown) => e)
    expect(isStreamInterrupted(error)).toBe(true)
    expect(budget.spentUsd).toBeCloseTo((11 * 1 + 3 * 1000) / 1e6, 10)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'fail', inputTokens: 11, outputTokens: 3 })
    expect(records[0]?.costUsd).toBe(budget.spentUsd)
  })

  it('a request the adapter cannot build: decision fail with why `not-retryable`', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    const claude = fakes.adapter(anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'c' }))
    const records: AttemptRecord[] = []
    await callModel({
      models: [claude],
      request: { messages: [{ ...user('hi'), name: 'bob' }], maxTokens: 8 },
      onAttempt: (r) => records.push(r),
      limits: { admission: false },
    }).catch(() => {})
    expect(fake.requests).toHaveLength(0)
    expect(records.map((r) => [r.decision, r.why])).toEqual([['fail', 'not-retryable']])
    expect(published.map((m) => [m.decision, m.why])).toEqual([['fail', 'not-retryable']])
  })

  it('an attempt never sent says `sent: false`; one that reached the provider does not', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(anthropicErrors.overloaded(), reply.text('ok'))
    const claude = fakes.adapter(anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'c' }))
    // The same adapter without `prepare`: its `send` refuses the request instead.
    const { prepare: _prepare, ...unprepared } = claude
    const records: AttemptRecord[] = []
    const bad = { messages: [{ ...user('hi'), name: 'bob' }], maxTokens: 8 }
    const options = {
      onAttempt: (r: AttemptRecord) => records.push(r),
      limits: { admission: false as const },
    }
    await callModel({ models: [claude], request: bad, ...options }).catch(() => {})
    await callModel({ models: [unprepared], request: bad, ...options }).catch(() => {})
    await callModel({
      models: [claude],
      request: { messages: [user('hi')], maxTokens: 8 },
      retry: { delay: FAST_RETRIES, budgets: false },
      ...options,
    })
    expect(fake.requests).toHaveLength(2)
    expect(records.map((r) => [r.decision, r.sent])).toEqual([
      ['fail', false],
      ['fail', false],
      ['retry', undefined],
      ['success', undefined],
    ])
    expect(published.map((m) => m.sent)).toEqual([false, false, undefined, undefined])
  })

  it('a request the HTTP client refused to send (a header value with a line break) says `sent: false`', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('never') })
    const broken = { ...dialects.openai, authHeaders: () => ({ authorization: 'Bearer sk-1\n' }) }
    const adapter = fakes.adapter(
      createAdapter(broken, { baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    const records: AttemptRecord[] = []
    await callModel({
      models: [adapter],
      request: { messages: [user('hi')], maxTokens: 8 },
      onAttempt: (r) => records.push(r),
      limits: { admission: false },
    }).catch(() => {})
    expect(fake.requests).toHaveLength(0)
    expect(records.map((r) => [r.errorKind, r.decision, r.sent])).toEqual([
      ['network', 'fail', false],
    ])
  })
  it('prompt-cache and reasoning counts ride on the record and the message: Anthropic reads and writes, OpenAI cached_tokens and reasoning_tokens', async () => {
    const claude = await fakes.start({ dialect: 'anthropic' })
    claude.enqueue(
      reply.error(200, {
        id: 'msg_c',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'text', text: 'ok' }],
        stop_reason: 'end_turn',
        usage: {
          input_tokens: 10,
          cache_creation_input_tokens: 200,
          cache_read_input_tokens: 3000,
          output_tokens: 4,
        },
      }),
    )
    const gpt = await fakes.start({ dialect: 'openai' })
    gpt.enqueue(
      reply.error(200, {
        id: 'c1',
        object: 'chat.completion',
        model: 'gpt-4o-mini',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
        ],
        usage: {
          prompt_tokens: 2000,
          completion_tokens: 4,
          total_tokens: 2004,
          prompt_tokens_details: { cached_tokens: 1920 },
          completion_tokens_details: { reasoning_tokens: 3 },
        },
      }),
    )
    const records: AttemptRecord[] = []
    for (const model of [
      fakes.adapterFor('anthropic', claude.baseURL, 'claude-sonnet-4-5'),
      fakes.adapterFor('openai', gpt.baseURL, 'gpt-4o-mini'),
    ]) {
      await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 8 },
        onAttempt: (r) => records.push(r),
        retry: { budgets: false },
        limits: { admission: false },
      })
    }
    expect(records[0]).toMatchObject({
      inputTokens: 3210,
      cachedInputTokens: 3000,
      cacheCreationInputTokens: 200,
    })
    expect(records[1]).toMatchObject({ inputTokens: 2000, cachedInputTokens: 1920 })
    expect(records[1]).not.toHaveProperty('cacheCreationInputTokens')
    expect(published[0]).toMatchObject({ cachedInputTokens: 3000, cacheCreationInputTokens: 200 })
    expect(published[1]).toMatchObject({ cachedInputTokens: 1920 })
    // Reasoning tokens (a part of the output) only when the provider said them.
    expect(records[1]).toMatchObject({ outputTokens: 4, reasoningTokens: 3 })
    expect(published[1]).toMatchObject({ reasoningTokens: 3 })
    expect(records[0]).not.toHaveProperty('reasoningTokens')
  })
})
