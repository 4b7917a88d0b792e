import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { CostBudget, type ModelPrice } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { anthropicTextOpening } from '../adapters/support/anthropicFrames.js'
import { useStreamServers } from '../adapters/support/streamServers.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { openAIChunk } from '../call/support/streamingServer.js'

// A stream cut after the provider had sent its input counts (Anthropic's
// `message_start`, Gemini's `usageMetadata`) is charged by them, with the
// output so far: the provider's running count or `ceil(characters / 4)` of
// what was delivered, whichever is more. That estimate had no cap there
// (the path had no `maxTokens`), while every other charge by characters is
// capped at `maxTokens` (plus `uncappedReasoningTokens`): 40,000 spaces
// answered to a request capped at 100 tokens were charged 10,000 output
// tokens, a hundred times what the provider can bill.

const fakes = useFakes()
// $1 a token: a charge reads as tokens.
const prices = { m: { inputPerMTok: 1e6, outputPerMTok: 1e6 } }
const long = ' '.repeat(40_000)

const { cutAfter } = useStreamServers()

async function callCut(
  dialect: 'anthropic' | 'gemini' | 'openai',
  baseURL: string,
  price: ModelPrice = prices.m,
) {
  const budget = new CostBudget({ limitUsd: 1e9, prices: { m: price } })
  const records: AttemptRecord[] = []
  const error = await callModel({
    models: [fakes.adapterFor(dialect, baseURL, 'm')],
    deadline: Deadline.after(10_000),
    request: { messages: [user('write')], maxTokens: 100, stream: true },
    retry: { maxAttempts: 1, delay: FAST_RETRIES },
    onAttempt: (r) => records.push(r),
    limits: { budget, admission: false },
  }).result.catch((e: unknown) => e)
  expect(isStreamInterrupted(error)).toBe(true)
  return { budget, records }
}

const anthropicFrames = (inputTokens: number, outputTokens: number) =>
  anthropicTextOpening({ model: 'm', inputTokens, outputTokens, text: long })

const geminiFrame = (candidates: number) =>
  `data: ${JSON.stringify({
    candidates: [{ content: { role: 'model', parts: [{ text: long }] }, index: 0 }],
    usageMetadata: { promptTokenCount: 6000, candidatesTokenCount: candidates },
    modelVersion: 'm',
  })}\r\n\r\n`

describe('a stream cut after its input counts: the delivered estimate is capped at maxTokens', () => {
  it('Anthropic: message_start’s input, and at most maxTokens of output', async () => {
    const baseURL = await cutAfter(anthropicFrames(6000, 1))
    const { budget, records } = await callCut('anthropic', baseURL.replace(/\/v1$/, ''))
    expect(budget.spentUsd).toBe(6000 + 100)
    expect(records[0]).toMatchObject({ inputTokens: 6000 })
  })

  it('Gemini: usageMetadata’s prompt count, and at most maxTokens of output', async () => {
    const baseURL = await cutAfter(geminiFrame(3))
    const { budget } = await callCut('gemini', baseURL)
    expect(budget.spentUsd).toBe(6000 + 100)
  })

  it('plus the reasoning a price says the provider bills beyond it', async () => {
    const baseURL = await cutAfter(anthropicFrames(6000, 1))
    const { budget } = await callCut('anthropic', baseURL.replace(/\/v1$/, ''), {
      ...prices.m,
      uncappedReasoningTokens: 50,
    })
    expect(budget.spentUsd).toBe(6000 + 150)
  })

  it('the provider’s own running count is charged as it is, past the cap', async () => {
    const baseURL = await cutAfter(geminiFrame(250))
    const { budget } = await callCut('gemini', baseURL)
    expect(budget.spentUsd).toBe(6000 + 250)
  })

  it('a short answer is still charged what it delivered', async () => {
    const baseURL = await cutAfter(
      anthropicFrames(6000, 1).replace(JSON.stringify(long), JSON.stringify('x'.repeat(40))),
    )
    const { budget } = await callCut('anthropic', baseURL.replace(/\/v1$/, ''))
    expect(budget.spentUsd).toBe(6000 + 10)
  })
})

describe('an OpenAI-compatible stream with usage on every chunk (vLLM’s continuous_usage_stats)', () => {
  it('cut, is charged by its running counts, as Anthropic’s and Gemini’s are', async () => {
    const chunk = (text: string, completion: number) =>
      openAIChunk({ content: text }).replace(
        '"finish_reason":null}]',
        `"finish_reason":null}],"usage":{"prompt_tokens":6000,"completion_tokens":${completion},"total_tokens":${6000 + completion}}`,
      )
    const baseURL = await cutAfter(chunk('The sea', 2) + chunk(' is wide', 4))
    const { budget, records } = await callCut('openai', baseURL)
    // Its prompt count, not the estimate of a one-word prompt; 4 output tokens.
    expect(budget.spentUsd).toBe(6000 + 4)
    expect(records[0]).toMatchObject({ inputTokens: 6000 })
  })
})
