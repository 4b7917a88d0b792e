import { type ProviderDialect, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

// A whole (non-streamed) 2xx answer that cannot be read: the provider
// generated, and billed, it, so it is treated as a stream whose event cannot
// be read — not resent to the same model, charged — unless the body is not
// the provider's at all (a proxy's HTML page): that one is retried, free.

const fakes = useFakes()

// $1 per input token, $2 per output token: costs read as token counts.
const prices = {
  big: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 },
  small: { inputPerMTok: 0, outputPerMTok: 0 },
}
const messages = [user('Summarise the report.')]
const maxTokens = 100
const WHOLE_USD = estimatePromptTokens({ messages }) + 2 * maxTokens

const TRUNCATED = '{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"mess'
const json = { 'content-type': 'application/json' }

async function modelAt(
  dialect: ProviderDialect,
  model: string,
  first: ReturnType<typeof reply.error>,
) {
  const fake = await fakes.start({ dialect, reply: reply.text(`from ${model}`) })
  fake.enqueue(first)
  return { fake, adapter: fakes.adapterFor(dialect, fake.baseURL, model) }
}

async function call(
  models: ReturnType<typeof fakes.adapterFor>[],
  stream = false,
): Promise<{
  outcome: { ok: true; text: string } | { ok: false; error: unknown }
  budget: CostBudget
  records: AttemptRecord[]
}> {
  const budget = new CostBudget({ limitUsd: 1e9, prices })
  const records: AttemptRecord[] = []
  const options = {
    models,
    retry: { maxAttempts: 3, budgets: false as const, delay: FAST_RETRIES },
    limits: { admission: false as const, budget },
    onAttempt: (r: AttemptRecord) => records.push(r),
  }
  const answer = stream
    ? callModel({ ...options, request: { messages, maxTokens, stream: true } }).result
    : callModel({ ...options, request: { messages, maxTokens } })
  const outcome = await answer.then(
    (value) => ({ ok: true as const, text: value.text }),
    (error: unknown) => ({ ok: false as const, error }),
  )
  return { outcome, budget, records }
}

describe('a whole 2xx answer that cannot be read is not resent to the same model, and is charged', () => {
  it.each([
    ['openai', 'truncated JSON', TRUNCATED],
    ['openai', 'JSON without choices', '{"id":"chatcmpl-1","object":"chat.completion"}'],
    ['anthropic', 'truncated JSON', '{"id":"msg_1","type":"message","content":[{"type":"te'],
    ['gemini', 'truncated JSON', '{"candidates":[{"content":{"parts":[{"te'],
  ] as const)(
    '%s, %s: the next model answers, the first is charged as the whole answer it generated',
    async (dialect, _name, body) => {
      const big = await modelAt(dialect, 'big', reply.error(200, body, json))
      const small = await fakes.start({ dialect, reply: reply.text('from small') })
      const { outcome, budget, records } = await call([
        big.adapter,
        fakes.adapterFor(dialect, small.baseURL, 'small'),
      ])
      expect(outcome).toEqual({ ok: true, text: 'from small' })
      // Once: asking again would have the same answer generated, and billed, again.
      expect(big.fake.requests).toHaveLength(1)
      expect(records[0]).toMatchObject({
        model: 'big',
        status: 200,
        errorKind: 'server_error',
        decision: 'fallback',
        costUsd: WHOLE_USD,
      })
      // The prompt estimate plus all of maxTokens, as for a 2xx answer cut while it was read.
      expect(budget.spentUsd).toBe(WHOLE_USD)
    },
  )

  it('with no fallback: fails with the typed error after one request, charged', async () => {
    const big = await modelAt('openai', 'big', reply.error(200, TRUNCATED, json))
    const { outcome, budget, records } = await call([big.adapter])
    expect(outcome.ok).toBe(false)
    const error = outcome.ok ? undefined : outcome.error
    expect(isModelUnavailable(error)).toBe(true)
    const cause = isModelUnavailable(error) ? error.lastCause : undefined
    expect(isProviderError(cause)).toBe(true)
    expect(cause).toMatchObject({ kind: 'server_error', retryable: false, status: 200 })
    expect(String((cause as Error).message)).toMatch(/not resent to this model/)
    expect(big.fake.requests).toHaveLength(1)
    expect(records.map((r) => r.decision)).toEqual(['fail'])
    expect(budget.spentUsd).toBe(WHOLE_USD)
  })

  it('a stream request answered with unreadable JSON (not a stream) is the same case', async () => {
    const big = await modelAt('openai', 'big', reply.error(200, TRUNCATED, json))
    const small = await fakes.start({ dialect: 'openai', reply: reply.text('from small') })
    const { outcome, budget } = await call(
      [big.adapter, fakes.adapterFor('openai', small.baseURL, 'small')],
      true,
    )
    expect(outcome).toEqual({ ok: true, text: 'from small' })
    expect(big.fake.requests).toHaveLength(1)
    expect(budget.spentUsd).toBe(WHOLE_USD)
  })
})

describe('a 2xx body that is not the provider’s answer at all is retried on the same model, free', () => {
  it.each([
    [
      'an HTML page (text/html)',
      '<!DOCTYPE html><html><body>Please sign in</body></html>',
      { 'content-type': 'text/html' },
    ],
    ['an HTML page labelled JSON', '<html><body>502 Bad Gateway</body></html>', json],
    ['plain text', 'upstream connect error', { 'content-type': 'text/plain' }],
    ['an empty body', '', json],
  ])(
    '%s: a proxy’s, not a generation — asked again, nothing charged',
    async (_name, body, headers) => {
      const big = await modelAt('openai', 'big', reply.error(200, body, headers))
      const { outcome, budget, records } = await call([big.adapter])
      expect(outcome).toEqual({ ok: true, text: 'from big' })
      expect(big.fake.requests).toHaveLength(2)
      expect(records[0]).toMatchObject({ status: 200, decision: 'retry', costUsd: 0 })
      // Only the answer's own usage: the page cost nothing.
      expect(budget.spentUsd).toBe(records[1]?.costUsd)
    },
  )
})
