import diagnostics from 'node:diagnostics_channel'
import { Deadline } from '@hourglass/core'
import { closedPort, openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAttemptMessage, llmChannels } from '../../src/channels.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const published: LlmAttemptMessage[] = []
const listener = (message: unknown) => published.push(message as LlmAttemptMessage)
diagnostics.subscribe(llmChannels.attempt.name, listener)
afterEach(() => {
  published.length = 0
})

describe('attempt records', () => {
  it('onAttempt and `hourglass:llm:attempt` describe every attempt: status, class, kind, decision, delay, version, cost, tokens', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      openAIErrors.rateLimited({ retryAfterMs: 30 }),
      reply.text('done', { usage: { inputTokens: 2000, outputTokens: 1000 } }),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini', name: 'oai' }),
    )
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { 'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 } },
    })
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(5000)
    await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 100 },
      promptVersion: 'v7',
      deadline,
      onAttempt: (r) => records.push(r),
      retry: { delay: { hintJitterRatio: 0 } },
      // The records of the policy's own decision: with the shared admission
      // the wait would be the cooldown's remaining time, 30 ms less whatever
      // passed since the 429 (29 ms on a busy machine) — tested elsewhere.
      limits: { budget, admission: false },
    })
    expect(records).toHaveLength(2)
    expect(records[0]).toMatchObject({
      attempt: 1,
      model: 'gpt-4o-mini',
      provider: 'oai',
      status: 429,
      errorClass: 'ProviderError',
      errorKind: 'rate_limited',
      decision: 'retry',
      delayMs: 30,
      promptVersion: 'v7',
      costUsd: 0,
      deadline,
    })
    expect(records[0]?.reason).toMatch(/retry 2 of 3 after 30 ms \(server\)/)
    expect(records[1]).toMatchObject({
      attempt: 2,
      status: 200,
      decision: 'success',
      inputTokens: 2000,
      outputTokens: 1000,
      finishReason: 'stop',
    })
    expect(records[1]?.responseModel).toEqual(expect.any(String))
    expect(records[1]?.costUsd).toBeCloseTo(0.0009, 10)
    expect(records.every((r) => r.latencyMs >= 0)).toBe(true)
    // The diagnostics channel carries the same messages, without the policy's prose.
    expect(published).toHaveLength(2)
    expect(published[0]).toMatchObject({ attempt: 1, decision: 'retry', errorKind: 'rate_limited' })
    expect('reason' in (published[0] as object)).toBe(false)
  })

  it('a network failure is recorded as such, with the transport error’s class', async () => {
    // Refused at connect: nothing was sent, so it is retried (a 200 cut
    // mid-body is not: test/adapters/cutReply.test.ts).
    const port = await closedPort()
    const model = fakes.adapter(
      openAICompatible({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const records: AttemptRecord[] = []
    await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 10 },
      onAttempt: (r) => records.push(r),
      retry: { maxAttempts: 2, delay: { baseDelayMs: 5 } },
    }).catch(() => {})
    expect(records.map((r) => [r.errorKind, r.decision])).toEqual([
      ['network', 'retry'],
      ['network', 'fail'],
    ])
    expect(records[0]?.status).toBe(0)
  })
})
