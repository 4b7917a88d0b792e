import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
const serverError = () =>
  reply.error(500, { error: { message: 'boom', type: 'server_error', code: null } })

describe('retry budgets are per endpoint, as admission’s cooldowns are', () => {
  it('a failing self-hosted OpenAI-compatible server does not use up the retries of calls to another one', async () => {
    // Two endpoints, both adapters named `openai` (openAICompatible's default name).
    const broken = await fakes.start({ dialect: 'openai', reply: serverError() })
    const healthy = await fakes.start({ dialect: 'openai' })
    const selfHosted = fakes.adapter(
      openAICompatible({ baseURL: broken.baseURL, apiKey: 'sk-1', model: 'llama' }),
    )
    const openai = fakes.adapter(
      openAICompatible({ baseURL: healthy.baseURL, apiKey: 'sk-2', model: 'gpt-4o-mini' }),
    )
    expect(selfHosted.name).toBe(openai.name)
    const budgets = new RetryBudgetRegistry({ maxTokens: 4 })
    const options = {
      retry: { maxAttempts: 5, delay: FAST_RETRIES, budgets },
      limits: { admission: false as const },
    }
    // The broken server drains its bucket: 4 → 2 tokens, retries stop.
    await callModel({
      models: [selfHosted],
      request: { messages: [user('hi')], maxTokens: 8 },
      ...options,
    }).catch(() => {})
    expect(broken.requests).toHaveLength(2)
    expect(budgets.forProvider(selfHosted).canRetry()).toBe(false)

    // One transient 500 at the healthy endpoint is still retried.
    healthy.enqueue(serverError())
    const answer = await callModel({
      models: [openai],
      request: { messages: [user('hi')], maxTokens: 8 },
      ...options,
    })
    expect(answer.text).toBe('Hello from the fake provider.')
    expect(healthy.requests).toHaveLength(2)
    expect(budgets.providers()).toEqual([
      `openai ${selfHosted.baseURL}`,
      `openai ${openai.baseURL}`,
    ])
  })

  it('one endpoint spelt two ways (host case, the default port, a trailing slash) has one budget', () => {
    const budgets = new RetryBudgetRegistry({ maxTokens: 4 })
    const a = budgets.forProvider({ name: 'openai', baseURL: 'https://API.openai.com:443/v1/' })
    const b = budgets.forProvider({ name: 'openai', baseURL: 'https://api.openai.com/v1' })
    expect(a).toBe(b)
    expect(budgets.providers()).toEqual(['openai https://api.openai.com/v1'])
  })
})
