import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'

const qwen = dialects.qwen

// Model Studio's error-code page lists these three as 429s: the workspace's
// billing state ("The prepaid bill is overdue."), which no wait lifts.
const native = (code: string, message: string) =>
  JSON.stringify({ code, message, request_id: '6f3c8a7e-0000-0000-0000-000000000000' })
const compatible = (code: string, message: string) =>
  JSON.stringify({ error: { message, type: code, param: null, code }, request_id: 'x' })

describe('Qwen / DashScope: 429s that are the bill, not a rate', () => {
  it.each([
    ['CommodityNotPurchased', 'Commodity has not purchased yet.'],
    ['PrepaidBillOverdue', 'The prepaid bill is overdue.'],
    ['PostpaidBillOverdue', 'The postpaid bill is overdue.'],
  ])(
    '429 %s is quota_exhausted, not retried as a rate limit (native and compatible mode)',
    (code, message) => {
      for (const body of [native(code, message), compatible(code, message)]) {
        expect(qwen.normalizeError({ status: 429, body })).toMatchObject({
          kind: 'quota_exhausted',
          retryable: false,
          providerCode: code,
        })
      }
    },
  )

  it('429 Throttling.RateQuota stays a retryable rate limit', () => {
    expect(
      qwen.normalizeError({
        status: 429,
        body: native(
          'Throttling.RateQuota',
          'Requests rate limit exceeded, please try again later.',
        ),
      }),
    ).toMatchObject({ kind: 'rate_limited', retryable: true })
  })
})
