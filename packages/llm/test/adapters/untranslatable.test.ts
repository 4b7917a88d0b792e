import { anthropicErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { createAdapter } from '../../src/adapters/createAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
// Anthropic has no equivalent of OpenAI's message `name`.
const named = { messages: [{ ...user('Hi'), name: 'bob' }], maxTokens: 32 }

describe('a request the adapter cannot translate', () => {
  it.each([
    ['non-streamed', false],
    ['streamed', true],
  ])(
    '%s: is refused as InvalidChatRequestError before anything is sent — one attempt, no retry, no retry-budget token, no fallback',
    async (_, stream) => {
      const primary = await fakes.start({ dialect: 'anthropic' })
      const backup = await fakes.start({ dialect: 'openai', reply: reply.text('from the backup') })
      const claude = fakes.adapter(
        anthropic({ baseURL: primary.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
      )
      const gpt = fakes.adapter(
        openAICompatible({ baseURL: backup.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
      )
      const budgets = new RetryBudgetRegistry()
      const records: AttemptRecord[] = []
      const options = {
        models: [claude, gpt],
        onAttempt: (r: AttemptRecord) => records.push(r),
        retry: { maxAttempts: 3, budgets, delay: FAST_RETRIES },
        limits: { admission: false as const },
      }
      const error = await (stream
        ? callModel({ ...options, request: { ...named, stream: true } }).result
        : callModel({ ...options, request: named })
      ).catch((e: unknown) => e)

      expect(isInvalidChatRequest(error)).toBe(true)
      expect(error).toMatchObject({ field: 'messages[0].name' })
      expect(primary.requests).toHaveLength(0)
      expect(backup.requests).toHaveLength(0)
      expect(records).toHaveLength(1)
      expect(records[0]).toMatchObject({ decision: 'fail', errorClass: 'InvalidChatRequestError' })
      expect(records[0]?.errorKind).toBeUndefined()
      const budget = budgets.forProvider(claude)
      expect(budget.tokens).toBe(budget.maxTokens)
    },
  )

  it('spends nothing a later call needs: its retry after a 500 is still allowed', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    const claude = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const budgets = new RetryBudgetRegistry()
    const options = {
      models: [claude],
      retry: { budgets, delay: FAST_RETRIES },
      limits: { admission: false as const },
    }
    for (let i = 0; i < 3; i++) {
      await expect(callModel({ ...options, request: named })).rejects.toMatchObject({
        code: 'INVALID_CHAT_REQUEST',
      })
    }
    fake.enqueue(anthropicErrors.apiError(), reply.text('fine'))
    const answer = await callModel({
      ...options,
      request: { messages: [user('Hi')], maxTokens: 32 },
    })
    expect(answer.text).toBe('fine')
    expect(fake.requests).toHaveLength(2)
  })

  it('whatever else building the request throws reaches the caller as it is, nothing sent', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const broken = new RangeError('the body hook refused this request')
    const model = fakes.adapter(
      createAdapter(
        dialects.openai,
        { baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' },
        () => {
          throw broken
        },
      ),
    )
    const records: AttemptRecord[] = []
    const request = { messages: [user('Hi')], maxTokens: 32 }
    const options = {
      models: [model],
      onAttempt: (r: AttemptRecord) => records.push(r),
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
    }
    await expect(callModel({ ...options, request })).rejects.toBe(broken)
    await expect(
      callModel({ ...options, request: { ...request, stream: true } }).result,
    ).rejects.toBe(broken)
    expect(fake.requests).toHaveLength(0)
    expect(records.map((r) => r.decision)).toEqual(['fail', 'fail'])
  })
})
