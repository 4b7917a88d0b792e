import { faultServer, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { useFakes, user } from '../call/support/fakes.js'

// Output whose usage never came is charged by an estimate of the text that
// arrived. Counted as chars / 4 whatever the script, Chinese output (about a
// token per character for every provider's tokenizer) was charged a quarter
// of what it cost: a caller could spend four times a `CostBudget`'s limit by
// cutting streams. It is now counted as the prompt estimate counts text:
// chars / 4 for ASCII, one token per other character.

const fakes = useFakes()

// $1 per input token, $1 per output token: a charge reads as tokens.
const prices = { m: { inputPerMTok: 1e6, outputPerMTok: 1e6 } }
const messages = [user('写一首关于大海的诗。')]
const PROMPT = estimatePromptTokens({ messages })
const limits = (budget: CostBudget) => ({ budget, admission: false as const })

/** What the prompt estimate counts for `text` alone: the tokens a charge by estimate gives it. */
const asPrompt = (text: string) => estimatePromptTokens({ messages: [user(text)] }) - 4

describe('output charged by estimate counts non-ASCII text as the prompt estimate does', () => {
  it('a Qwen stream cut after 40 Chinese characters: charged 40 output tokens, not 10', async () => {
    const fake = await fakes.start({
      dialect: 'qwen',
      // Ten tokens of four characters: 40 characters arrive, then the connection is cut.
      reply: reply.text('', {
        tokens: Array.from({ length: 12 }, () => '海浪翻滚'),
        cutAfterTokens: 10,
      }),
    })
    const adapter = fakes.adapterFor('qwen', fake.baseURL, 'm')
    const budget = new CostBudget({ limitUsd: 1e6, prices })
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [adapter],
      request: { messages, maxTokens: 1000, stream: true },
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    })
    const error = await stream.result.catch((e: unknown) => e)
    expect(isStreamInterrupted(error)).toBe(true)
    expect((error as { partialText: string }).partialText).toHaveLength(40)
    // Before: PROMPT + 10 (ceil(40 / 4)).
    expect(budget.spentUsd).toBe(PROMPT + 40)
    expect(records.map((r) => [r.decision, r.costUsd, r.outputTokens])).toEqual([
      ['fail', PROMPT + 40, undefined],
    ])
    expect(budget.reservedUsd).toBe(0)
  })

  it('the caller leaves a stream of mixed text: the output is what the prompt estimate counts for it', async () => {
    // The second token is a minute away: the caller leaves after the first.
    const tokens = ['Hello, 世界! 😀 café ', '大海']
    const fake = await fakes.start({
      dialect: 'qwen',
      reply: reply.text('', { tokens, tokenDelayMs: 60_000 }),
    })
    const adapter = fakes.adapterFor('qwen', fake.baseURL, 'm')
    const budget = new CostBudget({ limitUsd: 1e6, prices })
    const stream = callModel({
      models: [adapter],
      request: { messages, maxTokens: 1000, stream: true },
      limits: limits(budget),
    })
    let read = ''
    for await (const event of stream) {
      if (event.type !== 'text') continue
      read += event.text
      break
    }
    const error = await stream.result.catch((e: unknown) => e)
    expect(read).toBe(tokens[0])
    expect((error as Error).name).toBe('AbortError')
    // 'Hello, 世界! 😀 café ': 14 ASCII characters (4 tokens), 4 others (one
    // each, the emoji's two UTF-16 units one character). Before: ceil(20 / 4) = 5.
    expect(asPrompt(read)).toBe(8)
    expect(budget.spentUsd).toBe(PROMPT + 8)
  })

  it('a whole answer without usage, in Chinese: charged a token per character, at most maxTokens', async () => {
    const text = '大海'.repeat(150) // 300 characters: 300 tokens (75 as chars / 4)
    const body = (content: string) =>
      JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      })
    for (const [maxTokens, output] of [
      [1000, 300],
      [200, 200],
    ] as const) {
      const server = await faultServer({
        type: 'respond',
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: body(text),
      })
      try {
        const adapter = fakes.adapterFor('openai', `${server.url}/v1`, 'm')
        const budget = new CostBudget({ limitUsd: 1e6, prices })
        const answer = await callModel({
          models: [adapter],
          request: { messages, maxTokens },
          limits: limits(budget),
        })
        expect(answer.usageReported).toBe(false)
        expect(budget.spentUsd).toBe(PROMPT + output)
      } finally {
        await server.close()
      }
    }
  })

  it('a Gemini JSON-array answer broken by an error after Chinese output without counts', async () => {
    const chunk = (text: string) => ({
      candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0 }],
    })
    const body = JSON.stringify([
      chunk('大海'),
      chunk('翻滚不息'),
      { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } },
    ])
    const server = await faultServer(() => ({
      type: 'respond',
      headers: { 'content-type': 'application/json' },
      body,
    }))
    try {
      const adapter = fakes.adapter(
        gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'sk', model: 'm' }),
      )
      const budget = new CostBudget({ limitUsd: 1e6, prices })
      const records: AttemptRecord[] = []
      await callModel({
        models: [adapter],
        request: { messages, maxTokens: 1000 },
        retry: { maxAttempts: 1 },
        onAttempt: (r) => records.push(r),
        limits: limits(budget),
      }).catch(() => {})
      // Six characters: six output tokens (two as chars / 4).
      expect(records[0]?.costUsd).toBe(PROMPT + 6)
    } finally {
      await server.close()
    }
  })
})
