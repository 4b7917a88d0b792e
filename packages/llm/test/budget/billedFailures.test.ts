import diagnostics_channel from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()

// $1 per input token, $2 per output token: costs read as token counts.
const prices = {
  big: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 },
  small: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 },
}
const messages = [user('Write at length about the sea.')]
const maxTokens = 100
const PROMPT_USD = estimatePromptTokens({ messages })
const WHOLE_USD = PROMPT_USD + 2 * maxTokens
const retry = { maxAttempts: 3, delay: FAST_RETRIES }
// No shared state between tests: the default admission would cool the fakes' providers.
const limits = (budget: CostBudget) => ({ budget, admission: false as const })

/** Resolves once the next response's headers have reached the code awaiting them. */
function headersRead(): Promise<void> {
  return new Promise((resolve) => {
    const onHeaders = () => {
      diagnostics_channel.unsubscribe('undici:request:headers', onHeaders)
      setImmediate(resolve)
    }
    diagnostics_channel.subscribe('undici:request:headers', onHeaders)
  })
}

async function modelAt(reply: Parameters<typeof fakes.start>[0], model = 'big') {
  const fake = await fakes.start({ dialect: 'openai', ...reply })
  return { fake, adapter: fakes.adapterFor('openai', fake.baseURL, model) }
}

describe('attempts that failed after the provider took them are charged', () => {
  it('(a) a stream cut after its first tokens: the prompt estimate plus ceil(chars / 4) of what arrived', async () => {
    const { adapter } = await modelAt({
      reply: reply.text('', {
        tokens: ['Once upon', ' a time,', ' the sea', ' rose.'],
        cutAfterTokens: 2,
      }),
    })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [adapter],
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    })
    const error = await stream.result.catch((e: unknown) => e)
    expect(isStreamInterrupted(error)).toBe(true)
    // 'Once upon a time,' is 17 characters: 5 output tokens.
    expect((error as { partialText: string }).partialText).toBe('Once upon a time,')
    expect(budget.spentUsd).toBe(PROMPT_USD + 2 * 5)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'fail', costUsd: PROMPT_USD + 2 * 5 })
  })

  it('(a) a stream the caller left after its first token: the prompt plus what had arrived', async () => {
    const { fake, adapter } = await modelAt({
      reply: reply.text('', { tokens: ['Once', ' upon', ' a', ' time'], tokenDelayMs: 2000 }),
    })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [adapter],
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    })
    for await (const event of stream) if (event.type === 'text') break
    await stream.result.catch(() => {})
    expect(fake.requests[0]?.tokensSent).toBe(1)
    // 'Once': 1 output token.
    expect(budget.spentUsd).toBe(PROMPT_USD + 2)
    expect(records[0]).toMatchObject({ decision: 'fail', costUsd: PROMPT_USD + 2 })
  })

  it('(b) a non-streamed 2xx that broke off while read: the prompt estimate plus maxTokens, as `estimate`', async () => {
    const { fake, adapter } = await modelAt({
      reply: reply.text('a whole answer, lost on its way', { cutAfterTokens: 3 }),
    })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [adapter],
      request: { messages, maxTokens },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(fake.requests).toHaveLength(1)
    expect(budget.spentUsd).toBe(WHOLE_USD)
    expect(budget.spentUsd).toBe(budget.estimate('big', { messages, maxTokens }))
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ status: 200, decision: 'fail', costUsd: WHOLE_USD })
  })

  it('(c) a first-token timeout after the 200: the prompt estimate only', async () => {
    const { adapter } = await modelAt({ reply: reply.hang({ afterHeaders: true }) })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    // The timer runs on the deadline's manual clock, moved once the 200 has
    // come: on the wall clock a loaded machine could take the 1000 ms before
    // the headers, and the timeout would have no 200 to be charged after.
    const clock = new ManualClock()
    using deadline = Deadline.after(600_000, { clock })
    const headers = headersRead()
    const result = callModel({
      models: [adapter],
      deadline,
      request: { messages, maxTokens, stream: true },
      firstTokenTimeoutMs: 1000,
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    }).result.catch((e: unknown) => e)
    await headers
    clock.advance(1000)
    const error = await result
    expect(isModelUnavailable(error)).toBe(true)
    expect(budget.spentUsd).toBe(PROMPT_USD)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ status: 200, errorKind: 'timeout', costUsd: PROMPT_USD })
  })

  it('(c) a stream cut after its 200, before the first token: the prompt estimate only', async () => {
    const { adapter } = await modelAt({ reply: reply.text('never sent', { cutAfterTokens: 0 }) })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    await callModel({
      models: [adapter],
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    }).result.catch(() => {})
    expect(budget.spentUsd).toBe(PROMPT_USD)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ status: 200, errorKind: 'network', costUsd: PROMPT_USD })
  })
})

describe('attempts the provider refused cost nothing', () => {
  it.each([
    ['a 429', openAIErrors.rateLimited({ retryAfterMs: 10 })],
    ['a 500', reply.error(500, { error: { message: 'boom', type: 'server_error' } })],
    [
      'an error frame in a 200 stream, before the first token',
      reply.text('x', {
        streamError: { afterTokens: 0, body: { error: { message: 'overloaded' } } },
      }),
    ],
  ])('%s, then a success: only the success is recorded', async (_, refusal) => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(refusal, reply.text('fine', { usage: { inputTokens: 10, outputTokens: 5 } }))
    const adapter = fakes.adapterFor('openai', fake.baseURL, 'big')
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [adapter],
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    }).result
    expect(answer.text).toBe('fine')
    expect(fake.requests).toHaveLength(2)
    expect(budget.spentUsd).toBe(10 + 2 * 5)
    expect(records.map((r) => [r.decision, r.costUsd])).toEqual([
      ['retry', 0],
      ['success', 20],
    ])
  })
})

describe('a budget shared by a call’s models', () => {
  it('counts a cut first attempt: the fallback that no longer fits is refused before it is sent', async () => {
    const { fake: primary, adapter: big } = await modelAt({
      reply: reply.text('a whole answer, lost on its way', { cutAfterTokens: 3 }),
    })
    const { fake: backup, adapter: small } = await modelAt(
      { reply: reply.text('from the backup') },
      'small',
    )
    // Room for one worst-case attempt and a half: the cut one took the first.
    const budget = new CostBudget({ limitUsd: 1.5 * WHOLE_USD, prices })
    const error = await callModel({
      models: [big, small],
      request: { messages, maxTokens },
      retry,
      limits: limits(budget),
    }).catch((e: unknown) => e)
    expect(isBudgetExceeded(error)).toBe(true)
    expect(primary.requests).toHaveLength(1)
    expect(backup.requests).toHaveLength(0)
    expect(budget.spentUsd).toBe(WHOLE_USD)
  })

  it('and by an agent’s turns: a turn whose stream was cut leaves less for the next', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.text('', { tokens: ['x'.repeat(200), 'y'.repeat(200)], cutAfterTokens: 1 }),
      reply.text('the next turn'),
    )
    const adapter = fakes.adapterFor('openai', fake.baseURL, 'big')
    // 200 characters arrived: 50 output tokens, $100 — the second turn's
    // worst case no longer fits.
    const budget = new CostBudget({ limitUsd: PROMPT_USD + 100 + WHOLE_USD - 1, prices })
    const request = { messages, maxTokens, stream: true as const }
    const first = await callModel({
      models: [adapter],
      request,
      retry,
      limits: limits(budget),
    }).result.catch((e: unknown) => e)
    expect(isStreamInterrupted(first)).toBe(true)
    expect(budget.spentUsd).toBe(PROMPT_USD + 100)
    const second = await callModel({
      models: [adapter],
      request,
      retry,
      limits: limits(budget),
    }).result.catch((e: unknown) => e)
    expect(isBudgetExceeded(second)).toBe(true)
    expect(fake.requests).toHaveLength(1)
  })
})
