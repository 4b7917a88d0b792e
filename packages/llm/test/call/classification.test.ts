import { Deadline } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import {
  anthropicErrors,
  ernieErrors,
  faultServer,
  openAIErrors,
  qwenErrors,
  reply,
} from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { targetOf } from '../../src/call/outlook.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import { isRequestRejected } from '../../src/errors/RequestRejectedError.js'
import { driveOne, WaitClock } from '../support/waitClock.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('Say hello.')], maxTokens: 64 }

/**
 * A manual clock, and a deadline on it that never expires (no time limit, as
 * with none): the call's waits — its backoffs, the cooldowns of the
 * admission on that clock — are on the clock, which `driveOne` moves only
 * while the call waits. No real time passes, and times read on the clock are
 * the waits the call took, not how late a busy machine ran them.
 */
function manualTime() {
  const clock = new WaitClock()
  return { clock, deadline: Deadline.never({ clock }) }
}

async function pair() {
  const primaryFake = await fakes.start({ dialect: 'openai' })
  const backupFake = await fakes.start({ dialect: 'openai' })
  const primary = fakes.adapter(
    openAICompatible({
      baseURL: primaryFake.baseURL,
      apiKey: 'sk-primary',
      model: 'gpt-4o',
      name: 'primary',
    }),
  )
  const backup = fakes.adapter(
    openAICompatible({
      baseURL: backupFake.baseURL,
      apiKey: 'sk-backup',
      model: 'gpt-4o-mini',
      name: 'backup',
    }),
  )
  return { primaryFake, backupFake, primary, backup }
}

describe('classification: what is retried, what is not', () => {
  it('a 400 is never retried and never sent to the fallback model', async () => {
    const { primaryFake, backupFake, primary, backup } = await pair()
    primaryFake.setReply(openAIErrors.badRequest())
    const error = await callModel({
      models: [primary, backup],
      request,
      retry: { delay: FAST_RETRIES },
    }).catch((e: unknown) => e)
    expect(isRequestRejected(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'bad_request', status: 400, attempts: 1 })
    expect(primaryFake.requests).toHaveLength(1)
    expect(backupFake.requests).toHaveLength(0)
  })

  // The "overloaded" text check is for answers that carry no status of their own worth: never a 4xx.
  it('a 400 whose message says "overloaded" is still a bad request: not retried, no cooldown for the key', async () => {
    const { primaryFake, backupFake, primary, backup } = await pair()
    const admission = new Admission()
    primaryFake.setReply((sent) =>
      (sent.body as { tools?: unknown }).tools === undefined
        ? reply.text('fine')
        : reply.error(400, {
            error: {
              message: "Invalid schema for function 'is_overloaded': 'type' is required",
              type: 'invalid_request_error',
              param: 'tools[0].function.parameters',
              code: 'invalid_function_parameters',
            },
          }),
    )
    const error = await callModel({
      models: [primary, backup],
      request: { ...request, tools: [{ name: 'is_overloaded', parameters: {} }] },
      limits: { admission },
      retry: { delay: FAST_RETRIES },
    }).catch((e: unknown) => e)
    expect(isRequestRejected(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'bad_request', status: 400, attempts: 1 })
    expect(primaryFake.requests).toHaveLength(1)
    expect(backupFake.requests).toHaveLength(0)
    // The provider answered: its key is not cooling, the next call goes at once.
    expect(admission.forecast(targetOf(primary)).waitMs).toBe(0)
    const next = await callModel({ models: [primary], request, limits: { admission } })
    expect(next.text).toBe('fine')
  })

  it('a 500 whose body says "overloaded" is still an overload (the text check docs/dialects.md keeps for 5xx)', async () => {
    const { primaryFake, primary } = await pair()
    primaryFake.enqueue(
      reply.error(500, { error: { message: 'The engine is currently overloaded' } }),
    )
    const records: Array<{ errorKind?: string | undefined }> = []
    const { clock, deadline } = manualTime()
    const response = await driveOne(
      clock,
      callModel({
        models: [primary],
        request,
        deadline,
        limits: { admission: false },
        retry: { delay: FAST_RETRIES, budgets: false },
        onAttempt: (r) => records.push(r),
      }),
    )
    expect(response.text).toBe('Hello from the fake provider.')
    expect(records[0]).toMatchObject({ errorKind: 'overloaded', decision: 'retry' })
  })

  it('a content-policy refusal is never retried and never sent to the fallback model', async () => {
    const { primaryFake, backupFake, primary, backup } = await pair()
    primaryFake.setReply(openAIErrors.contentPolicy())
    const error = await callModel({
      models: [primary, backup],
      request,
      retry: { delay: FAST_RETRIES },
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({
      kind: 'content_policy',
      providerCode: 'content_policy_violation',
    })
    expect(primaryFake.requests).toHaveLength(1)
    expect(backupFake.requests).toHaveLength(0)
  })

  it('`x-should-retry: false` on a 500 stops retrying that model', async () => {
    const { primaryFake, primary } = await pair()
    primaryFake.setReply(openAIErrors.serverError({ shouldRetry: false }))
    const error = await callModel({
      models: [primary],
      request,
      retry: { maxAttempts: 5, delay: FAST_RETRIES },
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(error).toMatchObject({ attempts: 1 })
    expect(String((error as Error).message)).toMatch(/not retryable/)
    expect(primaryFake.requests).toHaveLength(1)
  })

  it('a 500 without the header is retried up to maxAttempts, then falls back', async () => {
    const { primaryFake, backupFake, primary, backup } = await pair()
    primaryFake.setReply(openAIErrors.serverError())
    backupFake.setReply(reply.text('From the backup.'))
    const { clock, deadline } = manualTime()
    const response = await driveOne(
      clock,
      callModel({
        models: [primary, backup],
        request,
        deadline,
        retry: { maxAttempts: 3, delay: FAST_RETRIES },
      }),
    )
    expect(response.text).toBe('From the backup.')
    expect(response.provider).toBe('backup')
    expect(primaryFake.requests).toHaveLength(3)
    expect(backupFake.requests).toHaveLength(1)
  })

  it('`Retry-After: 2` with 500 ms left fails at once, well before the deadline, saying why', async () => {
    const { primaryFake, primary } = await pair()
    primaryFake.setReply(openAIErrors.rateLimited({ retryAfterS: 2 }))
    const clock = new WaitClock()
    using deadline = Deadline.after(500, { clock })
    const started = clock.now()
    const error = await driveOne(clock, callModel({ models: [primary], request, deadline })).catch(
      (e: unknown) => e,
    )
    const elapsedMs = clock.now() - started
    expect(isModelUnavailable(error)).toBe(true)
    expect((error as { reason: string }).reason).toMatch(
      /server-requested wait of \d+ ms does not fit in the \d+ ms left; not slept/,
    )
    expect(elapsedMs).toBeLessThan(300)
    expect(deadline.expired).toBe(false)
    expect(primaryFake.requests).toHaveLength(1)
  })

  it('a 529 in background work fails at once: one request, no retry, no fallback', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const backupFake = await fakes.start({ dialect: 'openai' })
    const primary = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const backup = fakes.adapter(
      openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    const { clock, deadline } = manualTime()
    const started = clock.now()
    const error = await driveOne(
      clock,
      callModel({
        models: [primary, backup],
        request,
        deadline,
        retry: { priority: 'background', delay: FAST_RETRIES },
      }),
    ).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect((error as { reason: string }).reason).toMatch(
      /background work fails at once on overload/,
    )
    expect(clock.now() - started).toBeLessThan(1000)
    expect(fake.requests).toHaveLength(1)
    expect(backupFake.requests).toHaveLength(0)
  })

  it('a 529 in foreground work with a ready fallback goes to the fallback at once', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const backupFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('small model answer'),
    })
    const primary = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const backup = fakes.adapter(
      openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    const response = await callModel({
      models: [primary, backup],
      request,
      retry: { maxAttempts: 10, max529Retries: 2, delay: FAST_RETRIES },
    })
    expect(response.text).toBe('small model answer')
    expect(fake.requests).toHaveLength(1)
  })

  it('a 529 in foreground work with no fallback is retried up to max529Retries, then fails', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const primary = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const { clock, deadline } = manualTime()
    const error = await driveOne(
      clock,
      callModel({
        models: [primary],
        request,
        deadline,
        retry: { maxAttempts: 10, max529Retries: 2, delay: FAST_RETRIES },
      }),
    ).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect((error as { reason: string }).reason).toMatch(/more than max529Retries \(2\)/)
    expect(fake.requests).toHaveLength(3) // the first try and two overload retries
  })

  it('a Qwen rate limit inside an HTTP 200 body is retried, never returned as an answer', async () => {
    const fake = await fakes.start({ dialect: 'qwen' })
    fake.enqueue(qwenErrors.throttlingIn200(), reply.text('真正的回答'))
    const qwen = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'sk-qwen',
        model: 'qwen-plus',
        dialect: 'qwen',
      }),
    )
    const records: Array<{
      decision: string
      errorKind?: string | undefined
      status?: number | undefined
    }> = []
    const { clock, deadline } = manualTime()
    const response = await driveOne(
      clock,
      callModel({
        models: [qwen],
        request,
        deadline,
        onAttempt: (r) => records.push(r),
        retry: { delay: FAST_RETRIES },
      }),
    )
    expect(response.text).toBe('真正的回答')
    expect(fake.requests).toHaveLength(2)
    expect(records[0]).toMatchObject({ decision: 'retry', errorKind: 'rate_limited', status: 200 })
  })

  it('an error element in Gemini’s JSON-array answer, after text, is the provider’s error: retried, never a cut-short answer', async () => {
    // streamGenerateContent without alt=sse (a proxy that drops the query)
    // answers a JSON array; an error that broke the generation comes as its
    // last element, after the chunks generated so far.
    const chunk = (text: string, finishReason?: string) => ({
      candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, finishReason }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 },
    })
    const broken = [
      chunk('Hel'),
      { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } },
    ]
    const server = await faultServer((_request, i) => ({
      type: 'respond',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(i % 2 === 0 ? broken : [chunk('Hello', 'STOP')]),
    }))
    const model = fakes.adapter(
      gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'sk', model: 'gemini-2.5-flash' }),
    )
    try {
      for (const stream of [false, true]) {
        const records: Array<{ decision: string; errorKind?: string | undefined }> = []
        const { clock, deadline } = manualTime()
        const options = {
          models: [model],
          request,
          deadline,
          onAttempt: (r: { decision: string; errorKind?: string | undefined }) => records.push(r),
          retry: { delay: FAST_RETRIES },
        }
        const response = await driveOne(
          clock,
          stream
            ? callModel({ ...options, request: { ...request, stream: true } }).result
            : callModel(options),
        )
        // Before: 'Hel', finishReason 'unknown', one request, a success.
        expect({ stream, text: response.text, finishReason: response.finishReason }).toEqual({
          stream,
          text: 'Hello',
          finishReason: 'stop',
        })
        expect(records.map((r) => [r.decision, r.errorKind])).toEqual([
          ['retry', 'server_error'],
          ['success', undefined],
        ])
      }
      expect(server.records).toHaveLength(4)
    } finally {
      await server.close()
    }
  })

  it('a Gemini JSON-array answer broken by an error element is charged by the usage its chunks reported, once', async () => {
    // The provider billed the 1500 tokens it reported in that 200 body: the
    // failed attempt is charged by them (as an answer that ended in error
    // is), and says them on its record.
    const chunk = (text: string, usageMetadata: object, finishReason?: string) => ({
      candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, finishReason }],
      usageMetadata,
    })
    const broken = [
      chunk('Hel', { promptTokenCount: 900, candidatesTokenCount: 1 }),
      chunk('lo', { promptTokenCount: 1000, candidatesTokenCount: 500 }),
      { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } },
    ]
    const whole = [chunk('Hello', { promptTokenCount: 3, candidatesTokenCount: 2 }, 'STOP')]
    const server = await faultServer((_request, i) => ({
      type: 'respond',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(i % 2 === 0 ? broken : whole),
    }))
    const model = fakes.adapter(
      gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'sk', model: 'gemini-2.5-flash' }),
    )
    // 1 USD a token: each token reads as a dollar.
    const prices = { 'gemini-2.5-flash': { inputPerMTok: 1e6, outputPerMTok: 1e6 } }
    try {
      for (const stream of [false, true]) {
        const budget = new CostBudget({ limitUsd: 1e9, prices })
        const records: AttemptRecord[] = []
        const { clock, deadline } = manualTime()
        const options = {
          models: [model],
          request,
          deadline,
          limits: { budget },
          onAttempt: (r: AttemptRecord) => records.push(r),
          retry: { delay: FAST_RETRIES },
        }
        await driveOne(
          clock,
          stream
            ? callModel({ ...options, request: { ...request, stream: true } }).result
            : callModel(options),
        )
        // Before: [retry, 0 USD, no tokens] — the 1500 billed tokens charged nothing.
        expect(
          records.map((r) => ({
            stream,
            decision: r.decision,
            costUsd: r.costUsd,
            inputTokens: r.inputTokens,
            outputTokens: r.outputTokens,
          })),
        ).toEqual([
          { stream, decision: 'retry', costUsd: 1500, inputTokens: 1000, outputTokens: 500 },
          { stream, decision: 'success', costUsd: 1505, inputTokens: 3, outputTokens: 2 },
        ])
        expect(budget.spentUsd).toBe(1505)
      }
    } finally {
      await server.close()
    }
  })

  it('a Gemini JSON-array answer broken by an error element after output, with no usageMetadata, is charged as a stream cut before its usage is', async () => {
    // Text was generated before the error, and billed: without counts, the
    // prompt estimate plus ceil(characters / 4) of the output — as an SSE
    // stream of any dialect broken after its first token is charged.
    const chunk = (text: string) => ({
      candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0 }],
    })
    const broken = [
      chunk('Hel'),
      chunk('lo, wor'),
      { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } },
    ]
    // An error as the first element: nothing generated, nothing billed.
    const refused = [
      { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } },
    ]
    const prices = { 'gemini-2.5-flash': { inputPerMTok: 1e6, outputPerMTok: 1e6 } }
    // What a cut stream of 10 characters without usage is charged: 3 output tokens.
    const expected = new CostBudget({ limitUsd: 1e9, prices }).recordEstimate(
      'gemini-2.5-flash',
      request,
      3,
    )
    expect(expected).toBeGreaterThan(3)
    for (const [body, costUsd] of [
      [broken, expected],
      [refused, 0],
    ] as const) {
      const server = await faultServer(() => ({
        type: 'respond',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }))
      const model = fakes.adapter(
        gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'sk', model: 'gemini-2.5-flash' }),
      )
      try {
        for (const stream of [false, true]) {
          const budget = new CostBudget({ limitUsd: 1e9, prices })
          const records: AttemptRecord[] = []
          const { clock, deadline } = manualTime()
          const options = {
            models: [model],
            request,
            deadline,
            limits: { budget },
            onAttempt: (r: AttemptRecord) => records.push(r),
            retry: { maxAttempts: 1, delay: FAST_RETRIES },
          }
          await driveOne(
            clock,
            stream
              ? callModel({ ...options, request: { ...request, stream: true } }).result
              : callModel(options),
          ).catch(() => undefined)
          // Before: costUsd 0 for the broken answer, streamed or not.
          expect(records.map((r) => [stream, r.decision, r.costUsd])).toEqual([
            [stream, 'fail', costUsd],
          ])
          expect(budget.spentUsd).toBe(costUsd)
        }
      } finally {
        await server.close()
      }
    }
  })

  it('an ERNIE rate limit inside an HTTP 200 body goes to a ready fallback at once', async () => {
    const fake = await fakes.start({ dialect: 'ernie', reply: ernieErrors.rateLimited('rpm') })
    const backupFake = await fakes.start({
      dialect: 'deepseek',
      reply: reply.text('DeepSeek answers'),
    })
    const ernie = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'ak',
        model: 'ernie-4.0',
        dialect: 'ernie',
      }),
    )
    const deepseek = fakes.adapter(
      openAICompatible({
        baseURL: backupFake.baseURL,
        apiKey: 'sk',
        model: 'deepseek-chat',
        dialect: 'deepseek',
      }),
    )
    const response = await callModel({
      models: [ernie, deepseek],
      request,
      // A retry wait of seconds: with FAST_RETRIES's 10 ms, a loaded machine
      // could let the wait pass before the decision, the two models then
      // tied at "ready" and the list's order kept (a CI run retried ERNIE).
      retry: { maxAttempts: 2, delay: { ...FAST_RETRIES, baseDelayMs: 5_000, maxDelayMs: 5_000 } },
    })
    expect(response.text).toBe('DeepSeek answers')
    expect(fake.requests).toHaveLength(1)
    expect(backupFake.requests).toHaveLength(1)
  })

  it('an ERNIE 200-with-error body on the only model fails as ModelUnavailable, with the provider code', async () => {
    const fake = await fakes.start({ dialect: 'ernie', reply: ernieErrors.rateLimited('daily') })
    const ernie = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'ak',
        model: 'ernie-4.0',
        dialect: 'ernie',
      }),
    )
    const error = await callModel({
      models: [ernie],
      request,
      retry: { delay: FAST_RETRIES },
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as { lastCause: unknown }).lastCause
    expect(isProviderError(cause)).toBe(true)
    expect(cause).toMatchObject({ kind: 'quota_exhausted', status: 200, providerCode: '17' })
    expect(fake.requests).toHaveLength(1) // daily quota: permanent, not retried
  })

  it('every attempt carries the same Idempotency-Key, across retries and fallbacks', async () => {
    const { primaryFake, backupFake, primary, backup } = await pair()
    primaryFake.setReply(openAIErrors.serverError())
    const { clock, deadline } = manualTime()
    await driveOne(
      clock,
      callModel({
        models: [primary, backup],
        request,
        deadline,
        retry: { maxAttempts: 2, delay: FAST_RETRIES },
      }),
    )
    const keys = [...primaryFake.requests, ...backupFake.requests].map(
      (r) => r.headers['idempotency-key'],
    )
    expect(keys).toHaveLength(3)
    expect(new Set(keys).size).toBe(1)
    expect(keys[0]).toMatch(/\S{16,}/)
    expect(primaryFake.requests[0]?.apiKey).toBe('sk-primary')
    expect(backupFake.requests[0]?.apiKey).toBe('sk-backup')
  })
})

// The slow fake's 2 s and the client's 150 ms headers timeout are on one manual clock, moved
// only while the call waits (`driveOne`): the timeout fires first however busy the machine is.
describe('read timeouts on a model call', () => {
  it('are never resent to the same model (the provider was already generating, and billing): the call falls back', async () => {
    const { clock, deadline } = manualTime()
    const slowFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('late answer', { firstTokenDelayMs: 2000 }),
      clock,
    })
    const backupFake = await fakes.start({ dialect: 'openai', reply: reply.text('backup answer') })
    const readLimited = createFetch({ headersTimeoutMs: 150, clock })
    const slow = fakes.adapter(
      openAICompatible({
        baseURL: slowFake.baseURL,
        apiKey: 'sk-slow',
        model: 'gpt-4o',
        name: 'slow',
        fetch: readLimited,
      }),
    )
    const backup = fakes.adapter(
      openAICompatible({
        baseURL: backupFake.baseURL,
        apiKey: 'sk-backup',
        model: 'gpt-4o-mini',
        name: 'backup',
      }),
    )
    const records: Array<{ decision: string; errorKind?: string | undefined; model: string }> = []
    const answer = await driveOne(
      clock,
      callModel({
        models: [slow, backup],
        request,
        deadline,
        onAttempt: (r) => records.push(r),
        retry: { maxAttempts: 3, delay: FAST_RETRIES },
      }),
    )
    expect(answer.text).toBe('backup answer')
    // One request to the slow model, however many attempts were allowed.
    expect(slowFake.requests).toHaveLength(1)
    expect(records[0]).toMatchObject({
      model: 'gpt-4o',
      decision: 'fallback',
      errorKind: 'timeout',
    })
    await readLimited.close()
  })

  it('without a fallback, fail after one request rather than paying for the same generation again', async () => {
    const { clock, deadline } = manualTime()
    const slowFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('late', { firstTokenDelayMs: 2000 }),
      clock,
    })
    const readLimited = createFetch({ headersTimeoutMs: 150, clock })
    const slow = fakes.adapter(
      openAICompatible({
        baseURL: slowFake.baseURL,
        apiKey: 'sk-slow',
        model: 'gpt-4o',
        fetch: readLimited,
      }),
    )
    const error = await driveOne(
      clock,
      callModel({
        models: [slow],
        request,
        deadline,
        retry: { maxAttempts: 3, delay: FAST_RETRIES },
      }),
    ).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(slowFake.requests).toHaveLength(1)
    await readLimited.close()
  })
})
