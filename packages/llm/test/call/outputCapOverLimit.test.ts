import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import type { ChatMessage } from '../../src/types.js'
import { TOO_LARGE, TOO_LARGE_HEADERS } from '../dialects/support/tooLarge.js'
import { useFakes, user } from './support/fakes.js'
import { tpmLimited } from './support/tpmLimited.js'

const fakes = useFakes()

/**
 * The output cap counts against a token limit as the prompt does: with
 * `maxTokens` alone at or over the limit, no smaller history fits. The
 * recovery steps (often a summarising model call each) ran all the same,
 * and the call failed after them "(after collapse, compact)".
 */
describe('maxTokens alone over the TPM limit: the recovery steps are not run, the refusal says why', () => {
  /** Recovery steps that count their calls. */
  function steps() {
    const called: string[] = []
    const recovery = {
      collapse: (m: ChatMessage[]) => {
        called.push('collapse')
        return m
      },
      compact: () => {
        called.push('compact')
        return [user('h')]
      },
    }
    return { called, recovery }
  }

  it("admission's refusal (TPM 100, maxTokens 500, a 5-token prompt): RateLimitedError at once, no step called", async () => {
    const { clock, admission } = tpmLimited(100)
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('never') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt' }),
    )
    const { called, recovery } = steps()
    using deadline = Deadline.after(2000, { clock })
    const error = await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 500 },
      deadline,
      limits: { admission },
      recovery,
    }).catch((e: unknown) => e)

    expect(called).toEqual([])
    expect(isRateLimited(error)).toBe(true)
    if (!isRateLimited(error)) return
    expect(error.kind).toBe('request_too_large')
    expect(error.overLimit).toMatchObject({ limit: 'TPM', limitTokens: 100 })
    expect(error.reason).toMatch(
      /the output cap alone \(maxTokens 500\) is at or over the TPM limit \(100 tokens\).*lower maxTokens/,
    )
    expect(error.reason).not.toMatch(/after collapse/)
    expect(fake.requests).toHaveLength(0)
  })

  it('the provider\'s own refusal ("Limit 30000, Requested 36278") with maxTokens 32000: ModelUnavailableError at once, no step called', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.error(429, TOO_LARGE, TOO_LARGE_HEADERS),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    const { called, recovery } = steps()
    using deadline = Deadline.after(10_000)
    const error = await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 32_000 },
      deadline,
      limits: { admission: false },
      recovery,
    }).catch((e: unknown) => e)

    expect(called).toEqual([])
    expect(isModelUnavailable(error)).toBe(true)
    if (!isModelUnavailable(error)) return
    expect(error.reason).toMatch(
      /the output cap alone \(maxTokens 32000\) is at or over the TPM limit \(30000 tokens\)/,
    )
    expect(fake.requests).toHaveLength(1)
  })

  it('maxTokens under the limit: the steps still run (a smaller prompt may fit)', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.error(429, TOO_LARGE, TOO_LARGE_HEADERS),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    const { called, recovery } = steps()
    using deadline = Deadline.after(10_000)
    const error = await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 1000 },
      deadline,
      limits: { admission: false },
      recovery,
    }).catch((e: unknown) => e)

    expect(called).toEqual(['collapse', 'compact'])
    expect(isModelUnavailable(error) && error.reason).toMatch(/\(after collapse, compact\)$/)
  })
})
