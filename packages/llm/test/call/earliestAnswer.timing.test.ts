import { Deadline } from '@hourglass/core'
import { anthropicErrors, openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { defaultAdmission } from '../../src/admission/defaultAdmission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('Summarise the report.')], maxTokens: 64 }

/** A primary and a healthy backup, each on its own loopback provider. */
async function primaryAndBackup(primaryReply = reply.text('primary answer')) {
  const primaryFake = await fakes.start({ dialect: 'openai', reply: primaryReply })
  const backupFake = await fakes.start({ dialect: 'openai', reply: reply.text('backup answer') })
  const primary = fakes.adapter(
    openAICompatible({
      baseURL: primaryFake.baseURL,
      apiKey: 'sk-p',
      model: 'gpt-4o',
      name: 'primary',
    }),
  )
  const backup = fakes.adapter(
    openAICompatible({
      baseURL: backupFake.baseURL,
      apiKey: 'sk-b',
      model: 'gpt-4o-mini',
      name: 'backup',
    }),
  )
  return { primaryFake, backupFake, primary, backup }
}

/** Teach the default admission that `adapter` usually answers in `latencyMs` (its recent p90). */
async function usuallyTakes(adapter: ModelAdapter, latencyMs: number) {
  for (let i = 0; i < 5; i++) {
    await defaultAdmission().report(
      adapter.name,
      adapter.apiKeys[0],
      { ok: true, latencyMs },
      { endpoint: adapter.baseURL, model: adapter.model },
    )
  }
}

/** Put `adapter`'s key in a cooldown of `ms` in the default admission, as a 429 would. */
async function coolingFor(adapter: ModelAdapter, ms: number) {
  await defaultAdmission().report(
    adapter.name,
    adapter.apiKeys[0],
    { ok: false, error: { kind: 'rate_limited', status: 429, retryAfterMs: ms } },
    { endpoint: adapter.baseURL, model: adapter.model },
  )
}

describe('the earliest answer wins', () => {
  it('an overloaded primary (529 overloaded_error) with a healthy second model: answered by the second in < 1.5 s of a 15 s deadline, defaults only', async () => {
    const claude = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const backupFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('from the backup'),
    })
    const primary = fakes.adapter(
      anthropic({ baseURL: claude.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const backup = fakes.adapter(
      openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(15_000)
    const started = performance.now()
    const answer = await callModel({
      models: [primary, backup],
      request,
      deadline,
      onAttempt: (r) => records.push(r),
    })
    const elapsedMs = performance.now() - started
    expect(answer.text).toBe('from the backup')
    expect(elapsedMs).toBeLessThan(1500)
    expect(claude.requests).toHaveLength(1)
    expect(records.map((r) => [r.provider, r.decision])).toEqual([
      ['anthropic', 'fallback'],
      ['openai', 'success'],
    ])
    // Why: the primary's overload wait (5–10 s) against a model with no history, assumed to answer now.
    expect(records[0]?.choice).toBe('first model in the list')
    expect(records[0]?.reason).toMatch(
      /overloaded \(HTTP 529, overloaded_error\): gpt-4o-mini@openai ~0 ms \(ready, no latency history\) is expected to answer before this model ~\d{4,5} ms/,
    )
    expect(records[1]?.choice).toMatch(/^fallback from claude-opus-4-6@anthropic: /)
  })

  it('the same without admission or retry budgets: the fallback is still taken at once', async () => {
    const claude = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const backupFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('from the backup'),
    })
    const primary = fakes.adapter(
      anthropic({ baseURL: claude.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const backup = fakes.adapter(
      openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    using deadline = Deadline.after(15_000)
    const started = performance.now()
    const answer = await callModel({
      models: [primary, backup],
      request,
      deadline,
      retry: { budgets: false },
      limits: { admission: false },
    })
    expect(answer.text).toBe('from the backup')
    expect(performance.now() - started).toBeLessThan(1500)
    expect(claude.requests).toHaveLength(1)
  })

  it('a primary whose cooldown ends in 200 ms is still preferred over a fallback whose p90 is 3 s', async () => {
    const { primaryFake, backupFake, primary, backup } = await primaryAndBackup()
    await usuallyTakes(backup, 3000)
    await coolingFor(primary, 200)
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(15_000)
    const started = performance.now()
    const answer = await callModel({
      models: [primary, backup],
      request,
      deadline,
      onAttempt: (r) => records.push(r),
    })
    const elapsedMs = performance.now() - started
    expect(answer.text).toBe('primary answer')
    expect(elapsedMs).toBeGreaterThanOrEqual(190) // it waited out the cooldown…
    expect(elapsedMs).toBeLessThan(1500) // …and no more
    expect(primaryFake.requests).toHaveLength(1) // nothing was sent to learn the limit still held
    expect(backupFake.requests).toHaveLength(0)
    expect(records).toHaveLength(1)
    expect(records[0]?.choice).toMatch(
      /^first model in the list; waited \d+ ms for the provider's limits \(gpt-4o@primary ~\d+ ms \(wait \d+ ms, no latency history\), before gpt-4o-mini@backup ~3000 ms \(ready, p90 3000 ms\)\)$/,
    )
  })

  it('a primary cooling for 5 s is passed over, unsent, for a fallback whose p90 is 3 s', async () => {
    const { primaryFake, backupFake, primary, backup } = await primaryAndBackup()
    await usuallyTakes(backup, 3000)
    await coolingFor(primary, 5000)
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(15_000)
    const started = performance.now()
    const answer = await callModel({
      models: [primary, backup],
      request,
      deadline,
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('backup answer')
    expect(performance.now() - started).toBeLessThan(1000)
    expect(primaryFake.requests).toHaveLength(0)
    expect(backupFake.requests).toHaveLength(1)
    expect(records.map((r) => [r.provider, r.decision])).toEqual([['backup', 'success']])
    expect(records[0]?.choice).toMatch(
      /^fallback from gpt-4o@primary: gpt-4o@primary not waited for: gpt-4o-mini@backup ~3000 ms \(ready, p90 3000 ms\) is expected to answer before gpt-4o@primary ~\d{4} ms \(wait \d{4} ms, no latency history\)$/,
    )
  })

  it('a 429 asking for 100 ms is waited out on the primary when the fallback usually takes 3 s', async () => {
    const { primaryFake, backupFake, primary, backup } = await primaryAndBackup()
    primaryFake.enqueue(openAIErrors.rateLimited({ retryAfterMs: 100 }))
    await usuallyTakes(backup, 3000)
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(15_000)
    const answer = await callModel({
      models: [primary, backup],
      request,
      deadline,
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('primary answer')
    expect(primaryFake.requests).toHaveLength(2)
    expect(backupFake.requests).toHaveLength(0)
    expect(records.map((r) => r.decision)).toEqual(['retry', 'success'])
    expect(records[0]).toMatchObject({ errorKind: 'rate_limited' })
    // The cooldown's remaining time when the decision is made: the 100 ms
    // asked for, less what passed since the 429 was recorded (a busy machine
    // makes it 99).
    expect(records[0]?.delayMs).toBeGreaterThan(80)
    expect(records[0]?.delayMs).toBeLessThanOrEqual(100)
    expect(records[1]?.choice).toMatch(
      /^retry 2 of 3 on this model; waited \d+ ms for the provider's limits/,
    )
  })
})
