import { Deadline, ManualClock } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const closing: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((item) => item.close()))
})

/**
 * An adapter whose @hourglass/fetch refuses to send with under its
 * `minBudgetMs` left, while the call's deadline still runs: that is this
 * model's limit, not the end of the call. The next model — another fetch,
 * another provider — is asked in the time left; it used to end the call
 * with "deadline exceeded", nothing sent anywhere.
 */
describe("a model refused by its fetch's minBudgetMs, the call's time left", () => {
  const setup = async () => {
    const primary = await fakes.start({ dialect: 'openai' })
    const backup = await fakes.start({ dialect: 'openai' })
    backup.enqueue(reply.text('from the fallback'))
    const strict = createFetch({ minBudgetMs: 200 })
    closing.push(strict)
    const big = fakes.adapter(
      openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'big', fetch: strict }),
    )
    const small = fakes.adapter(
      openAICompatible({ baseURL: backup.baseURL, apiKey: 'sk', model: 'small' }),
    )
    return { primary, backup, big, small }
  }

  it('falls back to the next model, which answers', async () => {
    const { primary, backup, big, small } = await setup()
    const records: AttemptRecord[] = []
    // 150 ms left: under the primary fetch's 200, above the fallback's default 5.
    using deadline = Deadline.after(150, { clock: new ManualClock() })
    const response = await callModel({
      models: [big, small],
      request: { messages: [user('hi')], maxTokens: 8 },
      deadline,
      limits: { admission: false },
      retry: { budgets: false },
      onAttempt: (r) => records.push(r),
    })
    expect(response.model).toBe('small')
    expect(primary.requests).toHaveLength(0)
    expect(backup.requests).toHaveLength(1)
    expect(records.map((r) => [r.model, r.decision, r.errorKind, r.sent])).toEqual([
      ['big', 'fallback', 'deadline_exceeded', false],
      ['small', 'success', undefined, undefined],
    ])
  })

  it('as the last model, still ends the call with the fetch’s refusal', async () => {
    const { primary, big } = await setup()
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(150, { clock: new ManualClock() })
    const call = callModel({
      models: [big],
      request: { messages: [user('hi')], maxTokens: 8 },
      deadline,
      limits: { admission: false },
      retry: { budgets: false },
      onAttempt: (r) => records.push(r),
    })
    await expect(call).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect(primary.requests).toHaveLength(0)
    expect(records.map((r) => [r.decision, r.errorKind, r.sent])).toEqual([
      ['fail', 'deadline_exceeded', false],
    ])
  })
})
