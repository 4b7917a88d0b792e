import { Deadline } from '@hourglass/core'
import type { RecordedRequest } from '@hourglass/testkit'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { drive, driveOne, pause, WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hello')], maxTokens: 16 }

interface CallResult {
  deadlineMs: number
  ok: boolean
  error?: unknown
  elapsedMs: number
}

// Every time here is on a manual clock — the fake's window and answer time, the arrivals, the
// deadlines (and so the calls' waits), admission's cooldowns and staggers — moved only when every
// call waits on it (`drive`): what is measured is the waits the policy took, not how late a busy
// machine ran them.
describe('callModel with admission', () => {
  it('a rate-limit window: ≤ 1.3 upstream requests per call, long deadlines all answer, short ones fail fast', async () => {
    const clock = new WaitClock()
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('ok'), clock })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-4o-mini' }),
    )
    const admission = new Admission({ clock, defaultNeededMs: 100, staggerMs: 30 })
    fake.rateLimit({ forMs: 400 }) // answers 429 with `retry-after: 1` while the window lasts
    const settled = await drive(
      clock,
      Array.from({ length: 40 }, async (_, i): Promise<CallResult> => {
        await pause(clock, 15 * i) // arrival spacing (load shape)
        const deadlineMs = i % 4 === 3 ? 300 : 3000
        const started = clock.now()
        using deadline = Deadline.after(deadlineMs, { clock })
        return await callModel({ models: [model], request, deadline, limits: { admission } }).then(
          () => ({ deadlineMs, ok: true, elapsedMs: clock.now() - started }),
          (error: unknown) => ({ deadlineMs, ok: false, error, elapsedMs: clock.now() - started }),
        )
      }),
    )
    const results = settled.map((r) => {
      if (r.status === 'rejected') throw r.reason
      return r.value
    })
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
    const clock = new WaitClock()
    const fake = await fakes.start({ dialect: 'openai', reply: limitedKey, clock })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKeys: ['sk-a', 'sk-b'], model: 'gpt-4o-mini' }),
    )
    const admission = new Admission({ clock, defaultNeededMs: 50 })
    using deadline = Deadline.after(1000, { clock })
    const started = clock.now()
    const call = () =>
      driveOne(clock, callModel({ models: [model], request, deadline, limits: { admission } }))
    const first = await call()
    expect(first.text).toBe('answered with sk-b')
    expect(clock.now() - started).toBeLessThan(500) // no 2 s wait was taken
    const second = await call()
    expect(second.text).toBe('answered with sk-b')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-a', 'sk-b', 'sk-b'])
  })

  it('never takes a wait longer than the time left: the call fails at once, the next is refused without a request', async () => {
    const clock = new WaitClock()
    const fake = await fakes.start({
      dialect: 'openai',
      reply: openAIErrors.rateLimited({ retryAfterS: 2 }),
      clock,
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-4o-mini' }),
    )
    const admission = new Admission({ clock, defaultNeededMs: 50 })
    using deadline = Deadline.after(1000, { clock })
    const started = clock.now()
    const failure = () =>
      driveOne(
        clock,
        callModel({ models: [model], request, deadline, limits: { admission } }),
      ).catch((e: unknown) => e)
    // The 429 asks for 2 s; 1 s is left: not slept, not resent.
    const first = await failure()
    expect(isModelUnavailable(first)).toBe(true)
    expect((first as { reason: string }).reason).toMatch(/does not fit .* not slept/)
    // The next call meets the shared cooldown: refused at once, saying when to come back.
    const refused = await failure()
    expect(isRateLimited(refused)).toBe(true)
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(1000)
    expect(clock.now() - started).toBeLessThan(500)
    expect(fake.requests).toHaveLength(1)
  })
})
