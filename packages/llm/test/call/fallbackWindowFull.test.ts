import { Deadline } from '@hourglass/core'
import { openAIErrors, type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatRequest } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

// The earliest-answer rule read a model's cooldowns only: a fallback whose
// own `ProviderLimits` window was spent (its RPM taken by this process's
// calls) was "expected to answer at once". A primary cooling for a few
// hundred ms was left for it, and the call then waited on the fallback for
// its window's reset — or, a reset past the deadline, was refused there,
// the primary never asked again. The limits now remember when a window
// their last count found full frees, and the forecast takes the later of
// that and the cooldown.

const fakes = useFakes()
const request: ChatRequest = { messages: [user('hi')], maxTokens: 100 }

async function setup(limits: ProviderLimits) {
  const primary = await fakes.start()
  const fallback = await fakes.start()
  const models = [
    fakes.adapter(openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'first' })),
    fakes.adapter(
      openAICompatible({ baseURL: fallback.baseURL, apiKey: 'sk', model: 'spent', name: 'other' }),
    ),
  ]
  const admission = new Admission({ limits })
  const primaryTarget = {
    provider: 'openai',
    endpoint: primary.baseURL,
    keys: ['sk'],
    model: 'first',
  }
  return { primary, fallback, models, admission, primaryTarget }
}

/** The call each test makes: `models` in order under a 10 s deadline, no retry budgets. */
function call(
  models: Parameters<typeof callModel>[0]['models'],
  admission: Admission,
  options: { request?: ChatRequest; onAttempt?: (record: AttemptRecord) => void } = {},
) {
  return callModel({
    models,
    request: options.request ?? request,
    deadline: Deadline.after(10_000),
    retry: { budgets: false },
    limits: { admission },
    ...(options.onAttempt ? { onAttempt: options.onAttempt } : {}),
  })
}

/** Fills `provider`'s one-request window (a minute: past any deadline here) as an earlier call did. */
async function spend(limits: ProviderLimits, provider: string): Promise<void> {
  expect((await limits.tryAcquire(provider, 0)).admitted).toBe(true)
  expect((await limits.tryAcquire(provider, 0)).admitted).toBe(false)
}

describe('a fallback whose limits window is full is not expected to answer at once', () => {
  it('a rate limit met by the call: the primary is retried after its short wait', async () => {
    const limits = new ProviderLimits({ limits: { other: { rpm: 1 } } })
    const { primary, fallback, models, admission } = await setup(limits)
    await spend(limits, 'other')
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 200 }))
    const records: AttemptRecord[] = []
    const answer = await call(models, admission, { onAttempt: (r) => records.push(r) })
    expect(answer.model).toBe('first')
    expect(records.map((r) => [r.model, r.decision])).toEqual([
      ['first', 'retry'],
      ['first', 'success'],
    ])
    expect(fallback.requests).toHaveLength(0)
  })

  it('a primary already cooling: admission waits for it instead of refusing it for that fallback', async () => {
    const limits = new ProviderLimits({ limits: { other: { rpm: 1 } } })
    const { primary, fallback, models, admission, primaryTarget } = await setup(limits)
    // Another call met the primary's limit: cooling for 500 ms when this call starts.
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 500 }))
    await callModel({
      models: models.slice(0, 1),
      request,
      retry: { budgets: false, maxAttempts: 1 },
      limits: { admission },
    }).catch(() => {})
    await spend(limits, 'other')
    expect(admission.forecast(primaryTarget).waitMs).toBeGreaterThan(0)
    const records: AttemptRecord[] = []
    const answer = await call(models, admission, { onAttempt: (r) => records.push(r) })
    expect(answer.model).toBe('first')
    expect(records.map((r) => [r.model, r.decision])).toEqual([['first', 'success']])
    expect(fallback.requests).toHaveLength(0)
  })

  it('a fallback whose window has room is still preferred to the wait', async () => {
    const limits = new ProviderLimits({ limits: { other: { rpm: 2 } } })
    const { primary, fallback, models, admission } = await setup(limits)
    expect((await limits.tryAcquire('other', 0)).admitted).toBe(true)
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 5000 }))
    const answer = await call(models, admission)
    expect(answer.model).toBe('spent')
    expect(primary.requests).toHaveLength(1)
    expect(fallback.requests).toHaveLength(1)
  })

  it('forecast says how long the window is known full, and forgets it once a count finds room', async () => {
    const limits = new ProviderLimits({ limits: { other: { rpm: 1 } } })
    const admission = new Admission({ limits })
    const target = { provider: 'other', keys: ['sk'] }
    expect(admission.forecast(target).windowFullMs).toBeUndefined()
    const taken = await limits.count('other', 0)
    // The count took the window's last request: full until it resets.
    expect(admission.forecast(target).windowFullMs).toBeGreaterThan(0)
    expect(admission.forecast(target).waitMs).toBe(0)
    // Given back (the request was not sent): the window has room again.
    await (taken.admitted ? taken.giveBack?.() : undefined)
    expect(admission.forecast(target).windowFullMs).toBeUndefined()
  })
})

describe('a primary whose own limits window is full, with a fallback that cannot build the request', () => {
  // `extra.seed`: Anthropic has no equivalent, and the call would end there
  // with InvalidChatRequestError. The rate-limited and cooling paths left
  // such a fallback out; a primary held by its own limits window did not
  // (its forecast said 0: no build check), and the call jumped to it.
  const seeded: ChatRequest = { ...request, extra: { seed: 7 } }

  async function unbuildable() {
    const primary = await fakes.start()
    const refusing = await fakes.start({ dialect: 'anthropic' })
    const models = [
      fakes.adapter(openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'first' })),
      fakes.adapter(anthropic({ baseURL: refusing.baseURL, apiKey: 'sk', model: 'claude' })),
    ]
    return { primary, refusing, models }
  }

  it.each([
    [
      'known full (its last request taken here)',
      { rpm: 1 },
      (limits: ProviderLimits) => spend(limits, 'openai'),
    ],
    [
      'found full by the count (a token window with room for a smaller request only)',
      { tpm: 1000 },
      async (limits: ProviderLimits) => {
        expect((await limits.tryAcquire('openai', 950)).admitted).toBe(true)
      },
    ],
  ])('%s: its reset is waited for', async (_, limit, fill) => {
    // The window's reset (1 s) fits the deadline: only the fallback was in the way.
    const limits = new ProviderLimits({ limits: { openai: limit }, windowMs: 1000 })
    const { primary, refusing, models } = await unbuildable()
    await fill(limits)
    const records: AttemptRecord[] = []
    const answer = await call(models, new Admission({ limits }), {
      request: seeded,
      onAttempt: (r) => records.push(r),
    })
    expect(answer.model).toBe('first')
    expect(records.map((r) => [r.model, r.decision])).toEqual([['first', 'success']])
    expect(primary.requests).toHaveLength(1)
    expect(refusing.requests).toHaveLength(0)
  })
})

const available = redisAvailable()

describe.skipIf(!available)('with the limits shared through a real Redis', () => {
  let redis: RedisServer
  const clients: Redis[] = []
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    for (const c of clients.splice(0)) c.disconnect()
    await redis?.stop()
  })

  function limitsOn(keyPrefix: string): ProviderLimits {
    const c = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    c.on('error', () => {})
    clients.push(c)
    return new ProviderLimits({ limits: { other: { rpm: 2 } }, redis: c, keyPrefix })
  }

  it("a window the fleet filled: this process's count that took its last request says so", async () => {
    const keyPrefix = `fallbackWindowFull:${Date.now()}`
    const elsewhere = limitsOn(keyPrefix)
    const here = limitsOn(keyPrefix)
    // Another process took one of the two requests; this one the last.
    expect((await elsewhere.tryAcquire('other', 0)).admitted).toBe(true)
    const { primary, fallback, models, admission } = await setup(here)
    expect((await here.tryAcquire('other', 0)).admitted).toBe(true)
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 200 }))
    const answer = await call(models, admission)
    expect(answer.model).toBe('first')
    expect(fallback.requests).toHaveLength(0)
    expect(here.degraded).toBe(false)
  })
})
