import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isRequestRejected } from '../../src/errors/RequestRejectedError.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('Say hello.')], maxTokens: 64 }

/**
 * README: x-should-retry `true` "never makes a refusal the body names
 * retryable … — except a plain `bad_request`, a body that names its type
 * alone (`invalid_request_error` on a 409 the provider expects to clear),
 * which it retries". The dialect marks it retryable; the call loop must
 * retry it, not end the call with RequestRejectedError.
 */
describe('x-should-retry: true on a plain bad_request', () => {
  it("Anthropic's 409 invalid_request_error with x-should-retry: true is retried on the same model", async () => {
    const claude = await fakes.start({ dialect: 'anthropic' })
    claude.enqueue(
      reply.error(
        409,
        {
          type: 'error',
          error: { details: null, type: 'invalid_request_error', message: 'conflict' },
          request_id: 'req_1',
        },
        { 'x-should-retry': 'true' },
      ),
    )
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [
        fakes.adapter(
          anthropic({ baseURL: claude.baseURL, apiKey: 'sk', model: 'claude-sonnet-4-5' }),
        ),
      ],
      request,
      retry: { delay: FAST_RETRIES, budgets: false },
      limits: { admission: false },
      onAttempt: (record) => records.push(record),
    })
    expect(answer.text).toBe('Hello from the fake provider.')
    expect(claude.requests).toHaveLength(2)
    expect(records.map((r) => r.decision)).toEqual(['retry', 'success'])
  })

  it('an OpenAI 400 invalid_request_error with x-should-retry: true is retried; without the header it is not', async () => {
    const gpt = await fakes.start({ dialect: 'openai' })
    const plain = {
      error: { message: 'bad', type: 'invalid_request_error', param: null, code: null },
    }
    gpt.enqueue(reply.error(400, plain, { 'x-should-retry': 'true' }))
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: gpt.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    const options = {
      models: [adapter],
      request,
      retry: { delay: FAST_RETRIES, budgets: false as const },
      limits: { admission: false as const },
    }
    await expect(callModel(options)).resolves.toMatchObject({
      text: 'Hello from the fake provider.',
    })
    expect(gpt.requests).toHaveLength(2)

    gpt.enqueue(reply.error(400, plain))
    const refused = await callModel(options).catch((e: unknown) => e)
    expect(isRequestRejected(refused)).toBe(true)
    expect(gpt.requests).toHaveLength(3)
  })

  it('goes to no fallback once its attempts are spent: RequestRejectedError, as every bad_request', async () => {
    const claude = await fakes.start({ dialect: 'anthropic' })
    const other = await fakes.start({ dialect: 'openai' })
    const conflict = () =>
      reply.error(
        409,
        { type: 'error', error: { type: 'invalid_request_error', message: 'conflict' } },
        { 'x-should-retry': 'true' },
      )
    claude.enqueue(conflict(), conflict())
    const refused = await callModel({
      models: [
        fakes.adapter(
          anthropic({ baseURL: claude.baseURL, apiKey: 'sk', model: 'claude-sonnet-4-5' }),
        ),
        fakes.adapter(
          openAICompatible({ baseURL: other.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
        ),
      ],
      request,
      retry: { delay: FAST_RETRIES, budgets: false, maxAttempts: 2 },
      limits: { admission: false },
    }).catch((e: unknown) => e)
    expect(isRequestRejected(refused)).toBe(true)
    expect(claude.requests).toHaveLength(2)
    expect(other.requests).toHaveLength(0)
  })
})
