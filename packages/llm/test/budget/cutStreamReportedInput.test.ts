import diagnostics_channel from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { anthropicMessageStart, anthropicTextOpening } from '../adapters/support/anthropicFrames.js'
import { useStreamServers } from '../adapters/support/streamServers.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()

// $1 per input token, $0.1 per cached input token, $2 per output token.
const prices = {
  big: { inputPerMTok: 1_000_000, cachedInputPerMTok: 100_000, outputPerMTok: 2_000_000 },
}
const messages = [user('Write at length about the sea.')]
// 'The sea is wide' (15 characters) is 4 output tokens.
const OUTPUT_USD = 4 * 2

const { cutAfter, holdAfter } = useStreamServers()

async function callCut(dialect: 'anthropic' | 'gemini', baseURL: string) {
  const budget = new CostBudget({ limitUsd: 1_000_000, prices })
  const records: AttemptRecord[] = []
  const error = await callModel({
    models: [fakes.adapterFor(dialect, baseURL, 'big')],
    deadline: Deadline.after(10_000),
    request: { messages, maxTokens: 100, stream: true },
    retry: { maxAttempts: 1, delay: FAST_RETRIES },
    onAttempt: (r) => records.push(r),
    limits: { budget, admission: false },
  }).result.catch((e: unknown) => e)
  return { error, budget, records }
}

/** Anthropic's first event: the input as counted, and a placeholder output count of 1. */
const MESSAGE_START = anthropicMessageStart({ model: 'big', inputTokens: 6000 })

/**
 * Resolves once the next response's body has brought `frames` whole (its
 * headers came before) and the code reading it has run: undici publishes
 * each chunk just before it hands it over, and what reads it runs in the
 * ticks and microtasks after.
 */
function bodyRead(frames: string): Promise<void> {
  const name = 'undici:request:bodyChunkReceived'
  let bytes = 0
  return new Promise((resolve) => {
    const onChunk = (message: unknown) => {
      bytes += (message as { chunk: Uint8Array }).chunk.byteLength
      if (bytes < Buffer.byteLength(frames)) return
      diagnostics_channel.unsubscribe(name, onChunk)
      setImmediate(resolve)
    }
    diagnostics_channel.subscribe(name, onChunk)
  })
}

describe('a stream cut before its usage event is charged by the input counts the provider already sent', () => {
  it('Anthropic: message_start’s input count, not the prompt estimate', async () => {
    const baseURL = await cutAfter(
      anthropicTextOpening({ model: 'big', inputTokens: 6000, text: 'The sea is wide' }),
    )
    // The Anthropic adapter's base URL has no /v1 (its path is /v1/messages).
    const { error, budget, records } = await callCut('anthropic', baseURL.replace(/\/v1$/, ''))
    expect(isStreamInterrupted(error)).toBe(true)
    expect(budget.spentUsd).toBeCloseTo(6000 * 1 + OUTPUT_USD, 6)
    // The record carries the provider's counts only: its input count, and no
    // output count (message_start's `output_tokens: 1` is a placeholder; the
    // 4 charged are the delivered text's estimate, never passed off as usage).
    expect(records[0]).toMatchObject({ inputTokens: 6000 })
    expect(records[0]?.outputTokens).toBeUndefined()
  })

  it('Gemini: the last chunk’s usageMetadata (prompt and cached content), not the prompt estimate', async () => {
    const chunk = {
      candidates: [{ content: { role: 'model', parts: [{ text: 'The sea is wide' }] }, index: 0 }],
      usageMetadata: {
        promptTokenCount: 6000,
        cachedContentTokenCount: 5000,
        candidatesTokenCount: 4,
        totalTokenCount: 6004,
      },
      modelVersion: 'big',
      responseId: 'r1',
    }
    const baseURL = await cutAfter(`data: ${JSON.stringify(chunk)}\r\n\r\n`)
    const { error, budget, records } = await callCut('gemini', baseURL)
    expect(isStreamInterrupted(error)).toBe(true)
    // 1000 uncached prompt tokens, 5000 read from Gemini's (implicit) cache.
    expect(budget.spentUsd).toBeCloseTo(1000 * 1 + 5000 * 0.1 + OUTPUT_USD, 6)
    expect(records[0]).toMatchObject({ inputTokens: 6000 })
    expect(records[0]?.outputTokens).toBeUndefined()
  })
})

describe('a stream that took the request and sent no token is charged by the input counts it sent', () => {
  it('Anthropic: message_start, then no token before the first-token timeout', async () => {
    // A 200 Anthropic stream that sends `message_start`, then nothing: no token, no end.
    const baseURL = await holdAfter(MESSAGE_START)
    const budget = new CostBudget({ limitUsd: 1_000_000, prices })
    const records: AttemptRecord[] = []
    // The timer runs on the deadline's manual clock, moved once message_start
    // has been read: on the wall clock a loaded machine could take the 1000 ms
    // before it, and the timeout would have no counts to charge by.
    const clock = new ManualClock()
    using deadline = Deadline.after(600_000, { clock })
    const read = bodyRead(MESSAGE_START)
    const call = callModel({
      models: [fakes.adapterFor('anthropic', baseURL.replace(/\/v1$/, ''), 'big')],
      deadline,
      request: { messages, maxTokens: 100, stream: true },
      firstTokenTimeoutMs: 1000,
      retry: { maxAttempts: 1, delay: FAST_RETRIES },
      onAttempt: (r) => records.push(r),
      limits: { budget, admission: false },
    }).result.catch(() => {})
    await read
    clock.advance(1000)
    await call
    // The input as counted, and message_start's 1 output token.
    expect(budget.spentUsd).toBeCloseTo(6000 + 2, 6)
    expect(records[0]).toMatchObject({ errorKind: 'timeout', costUsd: expect.closeTo(6002, 6) })
  })

  it('its record carries the input count it was charged by, and no output count', async () => {
    // A 200 Anthropic stream that sends `message_start`, then nothing: no token, no end.
    const baseURL = await holdAfter(MESSAGE_START)
    const records: AttemptRecord[] = []
    // Each on its deadline's manual clock, moved once message_start has been
    // read (a loaded machine's wall clock could run the 1000 ms out first).
    const call = async (limits: CallModelOptions['limits']) => {
      const clock = new ManualClock()
      using deadline = Deadline.after(600_000, { clock })
      const read = bodyRead(MESSAGE_START)
      const ended = callModel({
        models: [fakes.adapterFor('anthropic', baseURL.replace(/\/v1$/, ''), 'big')],
        deadline,
        request: { messages, maxTokens: 100, stream: true },
        firstTokenTimeoutMs: 1000,
        retry: { maxAttempts: 1, delay: FAST_RETRIES },
        onAttempt: (r) => records.push(r),
        limits,
      }).result.catch(() => {})
      await read
      clock.advance(1000)
      await ended
    }
    // With a budget (charged by those counts) and without one: the same record.
    await call({ budget: new CostBudget({ limitUsd: 1_000_000, prices }), admission: false })
    await call({ admission: false })
    expect(records.map((r) => [r.errorKind, r.inputTokens, r.outputTokens])).toEqual([
      ['timeout', 6000, undefined],
      ['timeout', 6000, undefined],
    ])
  })
})
