import { Deadline } from '@hourglass/core'
import { anthropicErrors, openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import {
  isOutputTruncated,
  type OutputTruncatedError,
} from '../../src/errors/OutputTruncatedError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { useFakes, user } from './support/fakes.js'
import { recordingReducers, tpmLimited } from './support/tpmLimited.js'

const fakes = useFakes()

describe('a max_tokens recovery step admission refuses for lack of time', () => {
  // The raised cap's 800 tokens do not fit beside the first request's
  // 400-odd; a continuation at the accepted 400 does. It went unasked: the
  // recovery ended with 17 characters, where `maxTokensCeiling: 0` got the
  // whole answer from the same window in two requests.
  it('a raised cap refused for the TPM window is dropped: the continuation at the accepted cap completes the answer', async () => {
    const { clock, admission } = tpmLimited()
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.text('The first half of', {
        finishReason: 'length',
        usage: { inputTokens: 10, outputTokens: 400 },
      }),
      reply.text(' the essay, ended.', { usage: { inputTokens: 30, outputTokens: 5 } }),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' }),
    )
    using deadline = Deadline.after(3000, { clock })
    const response = await callModel({
      models: [model],
      request: { messages: [user('write a long essay')], maxTokens: 400 },
      deadline,
      limits: { admission },
    })
    expect(response.text).toBe('The first half of the essay, ended.')
    expect(response.usage).toMatchObject({ inputTokens: 40, outputTokens: 405 })
    expect(fake.requests).toHaveLength(2)
    expect(JSON.stringify(fake.requests[1]?.body)).toContain('[Output token limit hit, continue]')
  })

  it('surfaces the cut answer already paid for (OutputTruncatedError, the refusal its cause), not the refusal alone', async () => {
    const { clock, admission } = tpmLimited()
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('The first half of', {
        finishReason: 'length',
        usage: { inputTokens: 10, outputTokens: 500 },
      }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' }),
    )
    using deadline = Deadline.after(3000, { clock })
    // The first request's 500-odd tokens leave room for neither the raised
    // cap's 1000 nor the continuation's 500-odd: the raised cap is dropped,
    // and the continuation refused ends the recovery.
    const error = await callModel({
      models: [model],
      request: { messages: [user('write a long essay')], maxTokens: 500 },
      deadline,
      limits: { admission },
    }).catch((e: unknown) => e)
    // Before: the RateLimitedError alone, and the answer paid for was gone.
    expect(isOutputTruncated(error)).toBe(true)
    const truncated = error as OutputTruncatedError
    expect(truncated.response.text).toBe('The first half of')
    expect(truncated.response.usage).toMatchObject({ inputTokens: 10, outputTokens: 500 })
    // The step refused sent nothing and is not named as taken.
    expect(truncated.recoveries).toEqual([])
    expect(isRateLimited(truncated.cause)).toBe(true)
    expect(truncated.cause).toMatchObject({ limit: 'tpm', kind: 'rate_limited' })
    expect(truncated.message).toMatch(/the next step was not run: rate limited by openai/)
    expect(fake.requests).toHaveLength(1)
  })

  it('a window that affords the raised cap but not the continuation after it: both answers counted, the step taken named', async () => {
    const { clock, admission } = tpmLimited()
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('The first half of', {
        finishReason: 'length',
        usage: { inputTokens: 10, outputTokens: 200 },
      }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' }),
    )
    using deadline = Deadline.after(3000, { clock })
    // 200-odd tokens, then the raised cap's 400-odd: the continuation's 400-odd no longer fit.
    const error = await callModel({
      models: [model],
      request: { messages: [user('write a long essay')], maxTokens: 200 },
      deadline,
      limits: { admission },
    }).catch((e: unknown) => e)
    expect(isOutputTruncated(error)).toBe(true)
    const truncated = error as OutputTruncatedError
    expect(truncated.recoveries).toEqual(['raise-cap'])
    // The raised cap's answer replaced the first; both were billed.
    expect(truncated.response.text).toBe('The first half of')
    expect(truncated.response.usage.outputTokens).toBe(400)
    expect(isRateLimited(truncated.cause)).toBe(true)
    expect(fake.requests).toHaveLength(2)
  })

  // The raised cap's ~1100 tokens are more than the whole 1000-token limit,
  // the prompt's ~300 beside the accepted 400 were not: the cap is what is
  // too large. collapse and compact (often a paid summarising call) ran for
  // it all the same, then the step was dropped and they ran again for the
  // continuation: four shrink calls where the continuation alone needs two.
  it('a raised cap too large for the whole TPM limit runs no collapse/compact: it is dropped, and only the continuation shrinks', async () => {
    const { clock, admission } = tpmLimited()
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.text('x'.repeat(1600), {
        finishReason: 'length',
        usage: { inputTokens: 300, outputTokens: 400 },
      }),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' }),
    )
    const shrinks: string[] = []
    using deadline = Deadline.after(3000, { clock })
    const error = await callModel({
      models: [model],
      request: { messages: [user('p'.repeat(1180))], maxTokens: 400 },
      deadline,
      limits: { admission },
      recovery: {
        collapse: (messages) => {
          shrinks.push(`collapse of ${messages.length}`)
          return messages
        },
        compact: (messages) => {
          shrinks.push(`compact of ${messages.length}`)
          return messages
        },
      },
    }).catch((e: unknown) => e)
    // Only the continuation's history (prompt, cut answer, continue turn) was shrunk.
    expect(shrinks).toEqual(['collapse of 3', 'compact of 3'])
    expect(isOutputTruncated(error)).toBe(true)
    const truncated = error as OutputTruncatedError
    expect(truncated.recoveries).toEqual([])
    expect(truncated.response.text).toHaveLength(1600)
    expect(truncated.cause).toMatchObject({ limit: 'tpm', kind: 'request_too_large' })
    expect(fake.requests).toHaveLength(1)
  })

  it('so too when admission’s size refusal is one of a list’s causes (the other model sent and failed)', async () => {
    const { clock, admission } = tpmLimited()
    const busy = await fakes.start({ dialect: 'openai', reply: openAIErrors.serverError() })
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.text('x'.repeat(1600), {
        finishReason: 'length',
        usage: { inputTokens: 300, outputTokens: 400 },
      }),
    )
    const models = [
      fakes.adapter(
        openAICompatible({ name: 'busy', baseURL: busy.baseURL, apiKey: 'sk-2', model: 'b' }),
      ),
      fakes.adapter(openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' })),
    ]
    const shrinks: string[] = []
    using deadline = Deadline.after(3000, { clock })
    const error = await callModel({
      models,
      request: { messages: [user('p'.repeat(1180))], maxTokens: 400 },
      deadline,
      limits: { admission },
      retry: { maxAttempts: 1 },
      recovery: recordingReducers(shrinks),
    }).catch((e: unknown) => e)
    // The raised cap went to `busy` (a 500): sent, so it ends the recovery, unshrunk.
    expect(shrinks).toEqual([])
    expect(isOutputTruncated(error)).toBe(true)
    expect((error as Error).message).toMatch(/; the next step failed: model unavailable/)
    // The first request's 500, then the raised cap's: no pass after a shrink.
    expect(busy.requests).toHaveLength(2)
    expect(fake.requests).toHaveLength(1)
  })

  it('the same refusal of the first request is still the RateLimitedError: nothing was produced', async () => {
    const { clock, admission } = tpmLimited()
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('whole') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' }),
    )
    using deadline = Deadline.after(3000, { clock })
    const call = () =>
      callModel({
        models: [model],
        request: { messages: [user('write a long essay')], maxTokens: 600 },
        deadline,
        limits: { admission },
      })
    expect((await call()).text).toBe('whole')
    // The window holds the first call's 600-odd tokens: a second does not fit before it resets.
    const error = await call().catch((e: unknown) => e)
    expect(isRateLimited(error)).toBe(true)
    expect(error).toMatchObject({ limit: 'tpm', kind: 'rate_limited' })
    expect(fake.requests).toHaveLength(1)
  })
})

describe('a raised cap a provider refused as too large itself, sent, beside a fallback admission refused for its size', () => {
  // A's own 413 is shrunk for (collapse), as it is alone or beside a sent
  // 500; a fallback admission turned away for its size beside it stopped
  // that: neither shrunk nor dropped, the call ended with the cut answer.
  it('is still shrunk for: collapse runs and the raised cap is answered', async () => {
    const { clock, admission } = tpmLimited()
    const a = await fakes.start({ dialect: 'anthropic' })
    a.enqueue(
      reply.text('The first half of', { finishReason: 'length' }),
      anthropicErrors.requestTooLarge(),
      reply.text('The whole essay, at the raised cap.'),
    )
    // Provider `openai`: its 1000-token TPM limit is under the raised cap's 1200.
    const b = await fakes.start({ dialect: 'openai', reply: reply.text('never') })
    const shrinks: number[] = []
    using deadline = Deadline.after(3000, { clock })
    const response = await callModel({
      models: [
        fakes.adapter(anthropic({ baseURL: a.baseURL, apiKey: 'k', model: 'claude-sonnet-4-5' })),
        fakes.adapter(openAICompatible({ baseURL: b.baseURL, apiKey: 'sk-b', model: 'm' })),
      ],
      request: { messages: [user('an old turn'), user('write a long essay')], maxTokens: 600 },
      deadline,
      limits: { admission },
      retry: { maxAttempts: 1 },
      recovery: {
        collapse: (messages) => {
          shrinks.push(messages.length)
          return messages.slice(-1)
        },
      },
    })
    expect(response.text).toBe('The whole essay, at the raised cap.')
    expect(shrinks.length).toBeGreaterThan(0)
    expect(a.requests).toHaveLength(3)
    expect(b.requests).toHaveLength(0)
  })
})
