import diagnostics from 'node:diagnostics_channel'
import { errorCode, ManualClock } from '@hourglass/core'
import { type ProviderDialect, type ProviderReply, reply } from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAttemptMessage, llmChannels } from '../../src/channels.js'
import type { StreamEvent } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const published: LlmAttemptMessage[] = []
const onPublished = (message: unknown) => published.push(message as LlmAttemptMessage)
beforeAll(() => diagnostics.subscribe(llmChannels.attempt.name, onPublished))
afterAll(() => diagnostics.unsubscribe(llmChannels.attempt.name, onPublished))
afterEach(() => {
  published.length = 0
})

const prices = { m: { inputPerMTok: 1, outputPerMTok: 1000 } }

/**
 * Every dialect's whole answer, its bytes written in 7-byte pieces 1 ms
 * apart (on the system clock): OpenAI's `finish` (read with its usage chunk)
 * reaches the consumer while `data: [DONE]` is still on its way.
 */
const WHOLE_ANSWER_SLOWLY = reply.text('one two three', { splitBytes: 7, writeGapMs: 1 })

/** The first token, then nothing more with the connection left open (tokens paced on a clock that never moves). */
const STALLS_AFTER_FIRST_TOKEN = reply.text('one two three', { tokenDelayMs: 1000 })

async function streamFrom(
  dialect: ProviderDialect,
  providerReply: ProviderReply,
  clock?: ManualClock | undefined,
) {
  const fake = await fakes.start({ dialect, clock, reply: providerReply })
  const model = fakes.adapterFor(dialect, fake.baseURL, 'm')
  const records: AttemptRecord[] = []
  const budget = new CostBudget({ limitUsd: 1, prices })
  const stream = callModel({
    models: [model],
    request: { messages: [user('count')], maxTokens: 16, stream: true },
    limits: { budget, admission: false },
    retry: { budgets: false },
    onAttempt: (record) => records.push(record),
  })
  return { fake, stream, records, budget }
}

/** Reads until `stopAt` is read, then breaks out of the loop. */
async function readUntil(
  stream: AsyncIterable<StreamEvent>,
  stopAt: (event: StreamEvent) => boolean,
): Promise<{ events: StreamEvent[]; thrown?: unknown }> {
  const events: StreamEvent[] = []
  try {
    for await (const event of stream) {
      events.push(event)
      if (stopAt(event)) break
    }
    return { events }
  } catch (thrown) {
    return { events, thrown }
  }
}

const DIALECTS = ['openai', 'deepseek', 'anthropic', 'gemini'] as const satisfies ProviderDialect[]

describe('breaking out of the loop on `finish`: the answer is whole, the call a success', () => {
  it.each(DIALECTS)('%s', async (dialect) => {
    const { fake, stream, records, budget } = await streamFrom(dialect, WHOLE_ANSWER_SLOWLY)
    const { events, thrown } = await readUntil(stream, (event) => event.type === 'finish')
    expect(thrown).toBeUndefined()
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' })

    const answer = await stream.result
    expect(answer.text).toBe('one two three')
    expect(answer.finishReason).toBe('stop')
    expect(answer.usage.outputTokens).toBe(3)
    expect(answer.usage.inputTokens).toBeGreaterThan(0)
    // The cost was recorded, and so was the attempt: a success, nothing aborted.
    expect(budget.spentUsd).toBeGreaterThan(0)
    expect(records.map((r) => [r.decision, r.errorKind, r.outputTokens])).toEqual([
      ['success', undefined, 3],
    ])
    expect(records[0]?.costUsd).toBe(budget.spentUsd)
    expect(published.map((m) => [m.decision, m.errorKind])).toEqual([['success', undefined]])
    // Nothing left open upstream: the rest of the body (`[DONE]`) was read, or the connection closed.
    await expect.poll(() => fake.inFlight).toBe(0)
    expect(fake.requests).toHaveLength(1)
  })
})

describe('breaking out of the loop mid-answer is still a cancellation', () => {
  it.each(DIALECTS)('%s', async (dialect) => {
    const { fake, stream, records } = await streamFrom(
      dialect,
      STALLS_AFTER_FIRST_TOKEN,
      new ManualClock(),
    )
    const { events, thrown } = await readUntil(stream, (event) => event.type === 'text')
    expect(thrown).toBeUndefined()
    expect(events).toEqual([{ type: 'text', text: 'one' }])
    const error = await stream.result.catch((e: unknown) => e)
    expect(errorCode(error)).toBe('AbortError')
    expect(records.map((r) => [r.decision, r.errorKind])).toEqual([['fail', 'aborted']])
    expect(published.map((m) => [m.decision, m.errorKind])).toEqual([['fail', 'aborted']])
    await expect.poll(() => fake.requests[0]?.outcome).toBe('client-closed')
    await expect.poll(() => fake.inFlight).toBe(0)
  })
})
