import { Deadline } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import type { ChatMessage } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'
import { tpmLimited } from './support/tpmLimited.js'

const fakes = useFakes()
const big: ChatMessage[] = [user('x'.repeat(4000))]
const small: ChatMessage[] = [user('short')]

describe('a request ProviderLimits refuses as too large gets the prompt_too_long steps, as the provider’s own refusal does', () => {
  it('one model: collapse runs, and the smaller request is sent and answered', async () => {
    const { clock, admission } = tpmLimited()
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('answered small') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' }),
    )
    const steps: string[] = []
    using deadline = Deadline.after(3000, { clock })
    const answer = await callModel({
      models: [model],
      request: { messages: big, maxTokens: 50 },
      deadline,
      limits: { admission },
      recovery: {
        collapse: () => {
          steps.push('collapse')
          return small
        },
      },
    })
    expect(answer.text).toBe('answered small')
    expect(steps).toEqual(['collapse'])
    expect(fake.requests.map((r) => r.rawBody.includes('short'))).toEqual([true])
  })

  it('beside another model that failed otherwise: the steps run, and the smaller request goes to the model that refused the size', async () => {
    const { clock, admission } = tpmLimited()
    const busy = await fakes.start({
      dialect: 'openai',
      reply: openAIErrors.serverError({ status: 500 }),
    })
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('answered small') })
    const models = [
      fakes.adapter(
        openAICompatible({ baseURL: busy.baseURL, apiKey: 'sk-2', model: 'b', name: 'busy' }),
      ),
      fakes.adapter(openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' })),
    ]
    const steps: string[] = []
    using deadline = Deadline.after(3000, { clock })
    const answer = await callModel({
      models,
      request: { messages: big, maxTokens: 50 },
      deadline,
      limits: { admission },
      retry: { maxAttempts: 1 },
      recovery: {
        collapse: () => {
          steps.push('collapse')
          return small
        },
      },
    })
    expect(answer.text).toBe('answered small')
    expect(steps).toEqual(['collapse'])
  })

  it('still too large after the steps: admission’s refusal, naming the models of every pass', async () => {
    const { clock, admission } = tpmLimited()
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('never') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'm' }),
    )
    using deadline = Deadline.after(3000, { clock })
    const error = await callModel({
      models: [model],
      request: { messages: big, maxTokens: 50 },
      deadline,
      limits: { admission },
      recovery: { collapse: (m) => m, compact: (m) => m },
    }).catch((e: unknown) => e)
    expect(isRateLimited(error) && !isModelUnavailable(error)).toBe(true)
    if (!isRateLimited(error)) return
    expect(error.kind).toBe('request_too_large')
    expect(error.retryAfterMs).toBe(Number.POSITIVE_INFINITY)
    expect(error.reason).toMatch(/\(after collapse, compact\)$/)
    expect(error.causes.map((c) => c.provider)).toEqual(['openai', 'openai', 'openai'])
    expect(fake.requests).toHaveLength(0)
  })
})
