import { anthropicErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { FAST_RETRIES, useFakes } from './support/fakes.js'

/**
 * Anthropic's tier spend cap answers 429 `rate_limit_error` like a rate
 * limit, but no wait within the month lifts it: no `retry-after`,
 * `error.details.error_code: "enforced_spend_limit_reached"`, "You have
 * reached your API usage limits … You will regain access on …"
 * (docs.claude.com/en/api/rate-limits: "retries fail until access
 * resumes"). It is the account's quota, as the workspace limit's 400 is.
 */

const fakes = useFakes()
const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 16 }

describe('Anthropic’s spend-cap 429', () => {
  it('is the quota spent, not a rate limit: not sent again, the next model answers', async () => {
    const capped = await fakes.start({
      dialect: 'anthropic',
      reply: anthropicErrors.spendCapReached(),
    })
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
    const kinds: unknown[] = []
    const response = await callModel({
      models: [
        fakes.adapter(anthropic({ baseURL: capped.baseURL, apiKey: 'sk-ant-a', model: 'claude' })),
        fakes.adapter(
          openAICompatible({ baseURL: backup.baseURL, apiKey: 'sk-b', model: 'gpt-4o' }),
        ),
      ],
      request,
      retry: { delay: FAST_RETRIES },
      onAttempt: (r) => kinds.push(r.errorKind),
    })
    expect(response).toMatchObject({ text: 'ok' })
    expect(kinds).toEqual(['quota_exhausted', undefined])
    expect(capped.requests).toHaveLength(1)
  })

  it('alone, fails at once without a retry', async () => {
    const capped = await fakes.start({
      dialect: 'anthropic',
      reply: anthropicErrors.spendCapReached(),
    })
    const failure = await callModel({
      models: [
        fakes.adapter(anthropic({ baseURL: capped.baseURL, apiKey: 'sk-ant-a', model: 'claude' })),
      ],
      request,
      retry: { delay: FAST_RETRIES },
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(failure)).toBe(true)
    expect(capped.requests).toHaveLength(1)
  })

  it('an ordinary 429 of the same type stays a rate limit', async () => {
    const limited = await fakes.start({ dialect: 'anthropic' })
    limited.enqueue(anthropicErrors.rateLimited({ retryAfterS: 0 }), reply.text('ok'))
    const kinds: unknown[] = []
    const response = await callModel({
      models: [
        fakes.adapter(anthropic({ baseURL: limited.baseURL, apiKey: 'sk-ant-a', model: 'claude' })),
      ],
      request,
      retry: { delay: FAST_RETRIES },
      onAttempt: (r) => kinds.push(r.errorKind),
    })
    expect(response).toMatchObject({ text: 'ok' })
    expect(kinds).toEqual(['rate_limited', undefined])
  })
})
