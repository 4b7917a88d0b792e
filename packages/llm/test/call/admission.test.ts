import { Deadline } from '@hourglass/core'
import type { RecordedRequest } from '@hourglass/testkit'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hello')], maxTokens: 16 }

describe('callModel with admission', () => {
  it('a rate-limit window: ≤ 1.3 upstream requests per call, long deadlines all answer, short ones fail fast', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-4o-mini' }),
    )
    const admission = new Admission({ defaultNeededMs: 100, staggerMs: 30 })
    fake.rateLimit({ forMs: 400 }) // answers 429 with `retry-after: 1` while the window lasts
    const calls: Array<
      Promise<{ deadlineMs: number; ok: boolean; error?: unknown; elapsedMs: number }>
    > = []
    for (let i = 0; i < 40; i++) {
      const deadlineMs = i % 4 === 3 ? 300 : 3000
      const started = performance.now()
      const deadline = Deadline.after(deadlineMs)
      calls.push(
        callModel({ models: [model], request, deadline, limits: { admission } })
          .then(
            () => ({ deadlineMs, ok: true, elapsedMs: performance.now() - started }),
            (error: unknown) => ({
              deadlineMs,
              ok: false,
              error,
              elapsedMs: performance.now() - started,
            }),
          )
          .finally(() => deadline.dispose()),
      )
      await new Promise((resolve) => setTimeout(resolve, 15)) // arrival spacing (load shape), not synchronisation
    }
    const results = await Promise.all(calls)
    const perCall = fake.requests.length / results.length
    const short = results.filter((r) => r.deadlineMs === 300)
    const refused = short.filter((r) => !r.ok)
    console.info(
      `admission + callModel: ${fake.requests.length} upstream requests for ${results.length} calls (${perCall.toFixed(2)} per call); ` +
        `short calls refused ${refused.length}, slowest refusal ${Math.max(0, ...refused.map((r) => r.elapsedMs)).toFixed(0)} ms`,
    )
    expect(perCall).toBeLessThanOrEqual(1.3)
    expect(results.filter((r) => r.deadlineMs === 3000).every((r) => r.ok)).toBe(true)
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) {
      expect(isRateLimited(r.error) || isModelUnavailable(r.error)).toBe(true)
      expect(r.elapsedMs).toBeLessThan(200) // well before the 300 ms deadline
    }
  })

  it('prefers a second key to waiting, and later calls skip the cooling key without sending', async () => {
    const limitedKey = (r: RecordedRequest) =>
      r.apiKey === 'sk-a'
        ? openAIErrors.rateLimited({ retryAfterS: 2 })
        : reply.text(`answered with ${r.apiKey}`)
    const fake = await fakes.start({ dialect: 'openai', reply: limitedKey })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKeys: ['sk-a', 'sk-b'], model: 'gpt-4o-mini' }),
    )
    const admission = new Admission({ defaultNeededMs: 50 })
    using deadline = Deadline.after(1000)
    const started = performance.now()
    const first = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(first.text).toBe('answered with sk-b')
    expect(performance.now() - started).toBeLessThan(500) // no 2 s wait was taken
    const second = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(second.text).toBe('answered with sk-b')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-a', 'sk-b', 'sk-b'])
  })

  it('never takes a wait longer than the time left: the call fails at once, the next is refused without a request', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: openAIErrors.rateLimited({ retryAfterS: 2 }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-4o-mini' }),
    )
    const admission = new Admission({ defaultNeededMs: 50 })
    using deadline = Deadline.after(1000)
    const started = performance.now()
    // The 429 asks for 2 s; 1 s is left: not slept, not resent.
    const first = await callModel({
      models: [model],
      request,
      deadline,
      limits: { admission },
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(first)).toBe(true)
    expect((first as { reason: string }).reason).toMatch(/does not fit .* not slept/)
    // The next call meets the shared cooldown: refused at once, saying when to come back.
    const refused = await callModel({
      models: [model],
      request,
      deadline,
      limits: { admission },
    }).catch((e: unknown) => e)
    expect(isRateLimited(refused)).toBe(true)
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(1000)
    expect(performance.now() - started).toBeLessThan(500)
    expect(fake.requests).toHaveLength(1)
  })
})
