import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

/**
 * Gemini's stream chunks carry running usage, thoughts included
 * (`thoughtsTokenCount` grows chunk by chunk); the fake now sends it. A
 * stream cut while the model was thinking has been billed for the thoughts
 * it reported so far — when it sent them: Gemini streams thoughts only to
 * a request that asks for them (`reasoning_effort`, below).
 */
const fakes = useFakes()
// $1 per input token, $2 per output token.
const prices = { big: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 } }

it('a Gemini stream cut after 40 thought tokens is charged the thoughts it reported', async () => {
  const thinking = Array.from({ length: 50 }, (_, i) => `w${i}`).join(' ')
  const fake = await fakes.start({
    dialect: 'gemini',
    reply: reply.text('The answer.', {
      thinking,
      usage: { inputTokens: 100 },
      cutAfterTokens: 40,
    }),
  })
  const budget = new CostBudget({ limitUsd: 1_000_000, prices })
  const records: AttemptRecord[] = []
  await callModel({
    models: [fakes.adapterFor('gemini', fake.baseURL, 'big')],
    deadline: Deadline.after(10_000),
    request: {
      messages: [user('Think hard.')],
      maxTokens: 1000,
      stream: true,
      // Asked for, the thoughts stream (with their running usage) as they come;
      // not asked for, Gemini sends nothing until the answer's first token.
      extra: { reasoning_effort: 'low' },
    },
    retry: { maxAttempts: 1, delay: FAST_RETRIES },
    onAttempt: (r) => records.push(r),
    limits: { budget, admission: false },
  }).result.catch(() => {})
  expect(fake.requests[0]).toMatchObject({ outcome: 'cut', tokensSent: 40 })
  // 100 input tokens at $1 and the 40 thought tokens Gemini reported at $2
  // — not an estimate from the thinking's characters (176 against the old fake).
  expect(records[0]).toMatchObject({ inputTokens: 100, reasoningTokens: 40 })
  expect(budget.spentUsd).toBeCloseTo(100 + 40 * 2, 6)
})
