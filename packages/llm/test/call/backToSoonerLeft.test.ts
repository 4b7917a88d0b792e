import diagnostics from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import {
  type LlmAttemptMessage,
  type LlmRetrySkippedMessage,
  llmChannels,
} from '../../src/channels.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import { useAdmissionWaits } from './support/admissionWaits.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }
const nextAdmissionWait = useAdmissionWaits()

/** Three models `a`, `b`, `c` at fakes of their own; admission and the deadline on one manual clock. */
async function threeModels() {
  const clock = new ManualClock(1_000)
  const admission = new Admission({
    clock,
    defaultNeededMs: 0,
    staggerMs: 0,
    logger: { warn: () => {} },
  })
  const fake: Record<string, FakeProvider> = {}
  const model: Record<string, ReturnType<typeof openAICompatible>> = {}
  for (const name of ['a', 'b', 'c']) {
    fake[name] = await fakes.start({ dialect: 'openai', reply: reply.text(`answered by ${name}`) })
    model[name] = fakes.adapter(
      openAICompatible({ baseURL: fake[name].baseURL, apiKey: `sk-${name}`, model: name }),
    )
  }
  const models = [model.a, model.b, model.c] as ReturnType<typeof openAICompatible>[]
  return { clock, admission, fake: fake as Record<'a' | 'b' | 'c', FakeProvider>, models }
}

/** A 500 the server says not to retry: the model is given up on at once, for a reason of its own. */
const broken = () => openAIErrors.serverError({ shouldRetry: false })

async function failed(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => undefined,
    (e: unknown) => e,
  )
}

type ThreeModels = Awaited<ReturnType<typeof threeModels>>

/** `threeModels()` where a is rate limited once, for `retryAfterS`, and b and c are broken. */
async function aRateLimitedOthersBroken(retryAfterS = 1): Promise<ThreeModels> {
  const three = await threeModels()
  three.fake.a.enqueue(openAIErrors.rateLimited({ retryAfterS }))
  three.fake.b.setReply(broken())
  three.fake.c.setReply(broken())
  return three
}

/** A call to a, b and c under their admission, without retry budgets; `options` add to or override that. */
function callThree(three: ThreeModels, options: Partial<CallModelOptions>) {
  return callModel({
    models: three.models,
    request,
    limits: { admission: three.admission },
    retry: { budgets: false },
    ...options,
  })
}

/**
 * `callThree`, started once admission's waits are listened for. `waited`
 * resolves when admission starts waiting for a cooldown — or when the call
 * settles first, so that one that ends without waiting fails the test at
 * once; `settled` is what the call failed with, undefined if it answered.
 */
function callUntilAdmissionWaits(three: ThreeModels, options: Partial<CallModelOptions>) {
  const waiting = nextAdmissionWait()
  const call = callThree(three, options)
  const settled = failed(call)
  return { call, settled, waited: Promise.race([waiting, settled]) }
}

/**
 * `callUntilAdmissionWaits`, its attempts recorded; once admission waits,
 * the clock moves on by the 1 s cooldown it waits for.
 */
async function callPastCooldown(three: ThreeModels, options: Partial<CallModelOptions>) {
  const records: AttemptRecord[] = []
  const started = callUntilAdmissionWaits(three, {
    ...options,
    onAttempt: (r) => records.push(r),
  })
  await started.waited
  three.clock.advance(1_000)
  return { ...started, records }
}

describe('a model left only because another was expected to answer sooner is gone back to once the others failed', () => {
  it('a 429 `Retry-After: 1` on a, b and c fail: a answers on its second request, after its cooldown', async () => {
    const three = await aRateLimitedOthersBroken()
    const { clock, fake } = three
    using deadline = Deadline.after(10_000, { clock })
    const records: AttemptRecord[] = []
    const { call, settled, waited } = callUntilAdmissionWaits(three, {
      deadline,
      onAttempt: (r) => records.push(r),
    })
    // Raced with the call: one that ends without waiting fails here at once.
    await waited
    // Nothing more is sent to a before its cooldown is over.
    expect(fake.a.requests).toHaveLength(1)
    clock.advance(1_000)
    const answer = await call
    expect(await settled).toBeUndefined()
    expect(answer.text).toBe('answered by a')
    expect(fake.a.requests).toHaveLength(2)
    expect(fake.b.requests).toHaveLength(1)
    expect(fake.c.requests).toHaveLength(1)
    expect(records.map((r) => [r.model, r.modelAttempt, r.decision])).toEqual([
      ['a', 1, 'fallback'],
      ['b', 1, 'fallback'],
      ['c', 1, 'fail'],
      ['a', 2, 'success'],
    ])
    expect(records[0]?.why).toBe('fallback-sooner')
    expect(records[3]?.choice).toMatch(
      /^back to a@openai after the models after it failed; waited 1000 ms for the provider's limits/,
    )
    // A return, not a retry: a's failure was counted once, as the fallback.
    expect(records[3]?.retryReason).toBeUndefined()
    expect(clock.now()).toBe(2_000)
  })

  it('without admission the call waits out a’s own wait itself, on the deadline’s clock', async () => {
    const three = await aRateLimitedOthersBroken()
    const { clock, fake } = three
    using deadline = Deadline.after(10_000, { clock })
    const records: AttemptRecord[] = []
    const call = callThree(three, {
      deadline,
      limits: { admission: false },
      onAttempt: (r) => {
        records.push(r)
        // c has failed: the call is about to wait for a's Retry-After.
        if (r.model === 'c') setImmediate(() => clock.advance(2_000))
      },
    })
    const answer = await call
    expect(answer.text).toBe('answered by a')
    expect(fake.a.requests).toHaveLength(2)
    expect(records.map((r) => [r.model, r.decision])).toEqual([
      ['a', 'fallback'],
      ['b', 'fallback'],
      ['c', 'fail'],
      ['a', 'success'],
    ])
    expect(records[3]?.choice).toMatch(
      /^back to a@openai after the models after it failed; waited \d+ ms for its wait to end$/,
    )
  })

  it('a cooling before the call (admission did not wait for it, nothing sent) is gone back to once b and c failed', async () => {
    const three = await threeModels()
    const { clock, fake, models } = three
    fake.a.enqueue(openAIErrors.rateLimited({ retryAfterS: 1 }))
    // An earlier call leaves a cooling for 1 s; b answers it.
    const earlier = await callThree(three, { models: [models[0], models[1]] as typeof models })
    expect(earlier.text).toBe('answered by b')
    fake.b.setReply(broken())
    fake.c.setReply(broken())
    using deadline = Deadline.after(10_000, { clock })
    const { call, records } = await callPastCooldown(three, { deadline })
    const answer = await call
    expect(answer.text).toBe('answered by a')
    expect(fake.a.requests).toHaveLength(2)
    expect(records.map((r) => [r.model, r.modelAttempt, r.decision])).toEqual([
      ['b', 1, 'fallback'],
      ['c', 1, 'fail'],
      ['a', 1, 'success'],
    ])
    expect(records[2]?.choice).toMatch(/^back to a@openai after the models after it failed; waited/)
  })

  it('a’s wait does not fit the deadline: the call fails as before, at once, a asked once', async () => {
    const three = await aRateLimitedOthersBroken(20)
    const { clock, fake } = three
    using deadline = Deadline.after(10_000, { clock })
    const error = await failed(callThree(three, { deadline }))
    expect(isModelUnavailable(error)).toBe(true)
    const unavailable = error as Error & {
      causes: Array<{ model: string; cause: unknown }>
      lastCause: unknown
    }
    expect(unavailable.causes.map((c) => c.model)).toEqual(['a', 'b', 'c'])
    expect(isProviderError(unavailable.lastCause)).toBe(true)
    expect(unavailable.lastCause).toMatchObject({ kind: 'server_error', status: 500 })
    expect(unavailable.message).toContain('not retryable')
    expect(fake.a.requests).toHaveLength(1)
    expect(clock.now()).toBe(1_000)
  })

  it('a model given up on for a non-retryable failure is not gone back to; one left for a sooner answer is', async () => {
    const three = await threeModels()
    const { clock, fake } = three
    fake.a.enqueue(broken())
    fake.b.enqueue(openAIErrors.rateLimited({ retryAfterS: 1 }))
    fake.c.setReply(broken())
    using deadline = Deadline.after(10_000, { clock })
    const { call, records } = await callPastCooldown(three, { deadline })
    const answer = await call
    expect(answer.text).toBe('answered by b')
    expect(fake.a.requests).toHaveLength(1)
    expect(records.map((r) => [r.model, r.decision])).toEqual([
      ['a', 'fallback'],
      ['b', 'fallback'],
      ['c', 'fail'],
      ['b', 'success'],
    ])
  })

  it('only non-retryable failures: nothing is gone back to', async () => {
    const three = await threeModels()
    const { fake, clock } = three
    fake.a.setReply(broken())
    fake.b.setReply(broken())
    fake.c.setReply(broken())
    using deadline = Deadline.after(10_000, { clock })
    const error = await failed(callThree(three, { deadline }))
    expect(isModelUnavailable(error)).toBe(true)
    expect((error as { causes: unknown[] }).causes).toHaveLength(3)
    expect([fake.a, fake.b, fake.c].map((f) => f.requests.length)).toEqual([1, 1, 1])
  })

  it('no model gets more requests than maxAttempts across the return', async () => {
    const three = await threeModels()
    const { clock, fake } = three
    fake.a.setReply(openAIErrors.rateLimited({ retryAfterS: 1 }))
    fake.b.setReply(broken())
    fake.c.setReply(broken())
    using deadline = Deadline.after(10_000, { clock })
    const { settled, records } = await callPastCooldown(three, {
      deadline,
      retry: { budgets: false, maxAttempts: 2 },
    })
    const error = await settled
    expect(isModelUnavailable(error)).toBe(true)
    expect(fake.a.requests).toHaveLength(2)
    expect(records.map((r) => [r.model, r.modelAttempt, r.decision])).toEqual([
      ['a', 1, 'fallback'],
      ['b', 1, 'fallback'],
      ['c', 1, 'fail'],
      ['a', 2, 'fail'],
    ])
    expect(records[3]?.reason).toContain('attempts exhausted (2 of 2)')
    // One entry per model, in the order each gave up: a's is its last, with every attempt sent to it.
    const { causes, attempts } = error as {
      causes: Array<{ model: string; attempts: number }>
      attempts: number
    }
    expect(causes.map((c) => [c.model, c.attempts])).toEqual([
      ['b', 1],
      ['c', 1],
      ['a', 2],
    ])
    expect(attempts).toBe(4)
  })

  it('maxAttempts 1: a model whose only attempt was rate limited is not gone back to', async () => {
    const three = await threeModels()
    const { fake, clock } = three
    fake.a.setReply(openAIErrors.rateLimited({ retryAfterS: 1 }))
    fake.b.setReply(broken())
    fake.c.setReply(broken())
    using deadline = Deadline.after(10_000, { clock })
    const error = await failed(
      callThree(three, { deadline, retry: { budgets: false, maxAttempts: 1 } }),
    )
    expect(isModelUnavailable(error)).toBe(true)
    expect(fake.a.requests).toHaveLength(1)
    expect(clock.now()).toBe(1_000)
  })
})

describe('a model gone back to has one entry in `causes`, its last', () => {
  it('a rate limited again on its return: its entry carries the fresh wait, and the causes’ attempts sum to the error’s', async () => {
    const three = await threeModels()
    const { clock, fake } = three
    fake.a.enqueue(openAIErrors.rateLimited({ retryAfterS: 1 }))
    fake.a.enqueue(openAIErrors.rateLimited({ retryAfterS: 20 }))
    // b and c rate limited past the deadline: every model met a limit, so
    // the caller is told the soonest wait among them (the gateway's
    // `Retry-After`), which must be a's fresh 20 s, not its stale 1 s.
    fake.b.setReply(openAIErrors.rateLimited({ retryAfterS: 30 }))
    fake.c.setReply(openAIErrors.rateLimited({ retryAfterS: 30 }))
    using deadline = Deadline.after(10_000, { clock })
    const { settled, waited } = callUntilAdmissionWaits(three, {
      deadline,
      retry: { budgets: false, maxAttempts: 2 },
    })
    await waited
    clock.advance(1_000)
    const error = await settled
    expect(isModelUnavailable(error)).toBe(true)
    const unavailable = error as Error & {
      attempts: number
      causes: Array<{ model: string; attempts: number; cause: unknown }>
    }
    expect([fake.a, fake.b, fake.c].map((f) => f.requests.length)).toEqual([2, 1, 1])
    expect(unavailable.attempts).toBe(4)
    expect(unavailable.causes.reduce((n, c) => n + c.attempts, 0)).toBe(unavailable.attempts)
    expect(unavailable.causes.map((c) => [c.model, c.attempts])).toEqual([
      ['b', 1],
      ['c', 1],
      ['a', 2],
    ])
    const waits = unavailable.causes.map((c) =>
      isProviderError(c.cause) ? c.cause.retryAfterMs : undefined,
    )
    expect(waits).toEqual([30_000, 30_000, 20_000])
    expect(Math.min(...waits.map((w) => w ?? Number.POSITIVE_INFINITY))).toBe(20_000)
  })
})

describe('the attempt made on a return is no retry', () => {
  const skipped: LlmRetrySkippedMessage[] = []
  const attempts: LlmAttemptMessage[] = []
  const onSkipped = (m: unknown) => skipped.push(m as LlmRetrySkippedMessage)
  const onAttempt = (m: unknown) => attempts.push(m as LlmAttemptMessage)
  beforeEach(() => {
    skipped.length = 0
    attempts.length = 0
    diagnostics.subscribe(llmChannels.retrySkipped.name, onSkipped)
    diagnostics.subscribe(llmChannels.attempt.name, onAttempt)
  })
  afterEach(() => {
    diagnostics.unsubscribe(llmChannels.retrySkipped.name, onSkipped)
    diagnostics.unsubscribe(llmChannels.attempt.name, onAttempt)
  })

  it('answered on the return: no `retryReason` (a’s failure counted once, as the fallback), no retry-skipped', async () => {
    const three = await aRateLimitedOthersBroken()
    const { clock } = three
    using deadline = Deadline.after(10_000, { clock })
    const { call, waited } = callUntilAdmissionWaits(three, { deadline })
    await waited
    clock.advance(1_000)
    expect((await call).text).toBe('answered by a')
    expect(
      attempts.map((m) => [m.model, m.modelAttempt, m.decision, m.why, m.retryReason]),
    ).toEqual([
      ['a', 1, 'fallback', 'fallback-sooner', undefined],
      ['b', 1, 'fallback', 'not-retryable', undefined],
      ['c', 1, 'fail', 'not-retryable', undefined],
      ['a', 2, 'success', undefined, undefined],
    ])
    expect(attempts[3]?.choice).toMatch(/^back to a@openai after the models after it failed/)
    expect(skipped).toEqual([])
  })

  it('the call ended during the return’s wait: no retry-skipped, for no retry was announced', async () => {
    const three = await aRateLimitedOthersBroken()
    const { fake, clock } = three
    using deadline = Deadline.after(10_000, { clock })
    const controller = new AbortController()
    const { settled, waited } = callUntilAdmissionWaits(three, {
      deadline,
      signal: controller.signal,
    })
    await waited
    controller.abort(new Error('caller left'))
    expect(await settled).toMatchObject({ message: 'caller left' })
    expect(fake.a.requests).toHaveLength(1)
    expect(attempts.map((m) => [m.model, m.decision])).toEqual([
      ['a', 'fallback'],
      ['b', 'fallback'],
      ['c', 'fail'],
    ])
    expect(skipped).toEqual([])
  })

  it('without admission, the call ended during a’s own wait: no retry-skipped either', async () => {
    const three = await aRateLimitedOthersBroken()
    const { clock, fake } = three
    using deadline = Deadline.after(10_000, { clock })
    const controller = new AbortController()
    const settled = failed(
      callThree(three, {
        deadline,
        signal: controller.signal,
        limits: { admission: false },
        onAttempt: (r) => {
          // c has failed: the call is about to wait for a's Retry-After.
          if (r.model === 'c') setImmediate(() => controller.abort(new Error('caller left')))
        },
      }),
    )
    expect(await settled).toMatchObject({ message: 'caller left' })
    expect(fake.a.requests).toHaveLength(1)
    expect(skipped).toEqual([])
  })
})
