import { HourglassError, isHourglassError } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { BudgetExceededError, isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import {
  isModelUnavailable,
  ModelUnavailableError,
} from '../../src/errors/ModelUnavailableError.js'
import { isRateLimited, RateLimitedError } from '../../src/errors/RateLimitedError.js'
import {
  isStreamInterrupted,
  StreamInterruptedError,
} from '../../src/errors/StreamInterruptedError.js'

describe('policy errors', () => {
  it('ModelUnavailableError carries the attempt count, a cause per model and the last cause', () => {
    const overloaded = new Error('529 overloaded_error')
    const limited = new Error('429 rate_limit_error')
    const error = new ModelUnavailableError({
      attempts: 4,
      causes: [
        {
          model: 'claude-opus-4-6',
          provider: 'anthropic',
          attempts: 3,
          cause: overloaded,
          reason: 'overloaded 3 times',
        },
        {
          model: 'gpt-4o-mini',
          provider: 'openai',
          attempts: 1,
          cause: limited,
          reason: 'wait does not fit',
        },
      ],
      lastCause: limited,
      reason: 'every model failed',
    })
    expect(error).toBeInstanceOf(HourglassError)
    expect(isModelUnavailable(error)).toBe(true)
    expect(error.code).toBe('MODEL_UNAVAILABLE')
    expect(error.attempts).toBe(4)
    expect(error.causes.map((c) => c.model)).toEqual(['claude-opus-4-6', 'gpt-4o-mini'])
    expect(error.lastCause).toBe(limited)
    expect(error.cause).toBe(limited)
    expect(error.message).toMatch(
      /after 4 attempt\(s\): every model failed \[anthropic\/claude-opus-4-6: overloaded 3 times; openai\/gpt-4o-mini: wait does not fit\]/,
    )
  })

  it('StreamInterruptedError carries the partial output', () => {
    const cut = new Error('socket hang up')
    const error = new StreamInterruptedError({
      model: 'm',
      provider: 'p',
      partialText: 'Hello, wor',
      partialContent: [{ type: 'text', text: 'Hello, wor' }],
      cause: cut,
    })
    expect(isStreamInterrupted(error)).toBe(true)
    expect(error).toMatchObject({
      code: 'STREAM_INTERRUPTED',
      partialText: 'Hello, wor',
      cause: cut,
    })
    expect(error.message).toMatch(/10 characters received/)
  })

  it('StreamInterruptedError says what arrived when it was not text: thinking, tool calls', () => {
    const error = new StreamInterruptedError({
      model: 'm',
      provider: 'p',
      partialText: '',
      partialContent: [
        { type: 'thinking', thinking: 'Let me see.' },
        { type: 'tool_call', id: 't1', name: 'lookup', arguments: {} },
      ],
    })
    expect(error.message).toMatch(/\(0 characters of text, 11 of thinking, 1 tool call received\)/)
  })

  it('RateLimitedError says when to retry, relative and absolute', () => {
    const before = Date.now()
    const error = new RateLimitedError({
      provider: 'openai',
      retryAfterMs: 1500.2,
      reason: 'cooling down',
    })
    expect(isRateLimited(error)).toBe(true)
    expect(error.code).toBe('RATE_LIMITED')
    expect(error.retryAfterMs).toBe(1501)
    expect(error.retryAtMs).toBeGreaterThanOrEqual(before + 1501)
    expect(error.retryAtMs).toBeLessThanOrEqual(Date.now() + 1501)
    expect(
      new RateLimitedError({ provider: 'x', retryAfterMs: 1, retryAtMs: 5, reason: 'r' }).retryAtMs,
    ).toBe(5)
  })

  it('guards recognise the code, not the class, so two installed copies still match', () => {
    const foreign = Object.assign(new HourglassError('BUDGET_EXCEEDED', 'from another copy'), {})
    expect(isBudgetExceeded(foreign)).toBe(true)
    expect(isBudgetExceeded(new Error('BUDGET_EXCEEDED'))).toBe(false)
    expect(
      isRateLimited(new BudgetExceededError({ limitUsd: 1, spentUsd: 1, estimateUsd: 1 })),
    ).toBe(false)
    expect(
      isHourglassError(new BudgetExceededError({ limitUsd: 1, spentUsd: 0.5, estimateUsd: 0.75 })),
    ).toBe(true)
    expect(new BudgetExceededError({ limitUsd: 1, spentUsd: 0.5, estimateUsd: 0.75 }).message).toBe(
      'cost budget exceeded: $0.5 spent + $0.75 estimated > $1 limit; the attempt was not sent',
    )
  })

  it('names amounts below a millionth of a dollar by their digits, not as $0', () => {
    // Six decimals alone printed a 1e-7 USD limit (a few tokens of a cheap
    // model) as "$0 limit", and "$0 spent + $0 estimated > $0 limit" read as nonsense.
    expect(
      new BudgetExceededError({ limitUsd: 1e-7, spentUsd: 0, estimateUsd: 1.5e-7 }).message,
    ).toBe(
      'cost budget exceeded: $0 spent + $0.00000015 estimated > $0.0000001 limit; the attempt was not sent',
    )
  })
})
