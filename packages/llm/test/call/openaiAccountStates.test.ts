import { type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }

/**
 * OpenAI's 429s for an account no wait brings back, as its API words them:
 * the bill unpaid (`billing_not_active`) and the account terminated
 * (`access_terminated`). Read as the status's rate limit, each was retried on
 * the same key after a backoff (1 s, then 2 s by default: 3 requests and ~3.5 s
 * per call) and the provider's other key was never tried.
 */
const ACCOUNT_STATES = [
  {
    type: 'billing_not_active',
    message: 'Your account is not active, please check your billing details on our website.',
    kind: 'quota_exhausted',
    reason: 'this key is out of quota; the next key of the provider is tried',
  },
  {
    type: 'access_terminated',
    message:
      'Your access was terminated due to violation of our policies, please check your email for more information.',
    kind: 'auth',
    reason: 'this key was rejected; the next key of the provider is tried',
  },
] as const

describe("OpenAI's 429 for an account that is not active: the next key at once, not a retry", () => {
  for (const state of ACCOUNT_STATES) {
    it(`${state.type}: not sent again on the same key; the provider's next key answers`, async () => {
      const byKey = (r: RecordedRequest) =>
        r.apiKey === 'sk-closed-account'
          ? reply.error(429, {
              error: { message: state.message, type: state.type, param: null, code: state.type },
            })
          : reply.text(`paid by ${r.apiKey}`)
      const fake = await fakes.start({ dialect: 'openai', reply: byKey })
      const model = fakes.adapter(
        openAICompatible({
          baseURL: fake.baseURL,
          apiKeys: ['sk-closed-account', 'sk-open-account'],
          model: 'gpt-4o-mini',
        }),
      )
      const records: AttemptRecord[] = []
      const answer = await callModel({
        models: [model],
        request,
        retry: { delay: FAST_RETRIES },
        limits: { admission: false },
        onAttempt: (r) => records.push(r),
      })
      expect(answer.text).toBe('paid by sk-open-account')
      expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-closed-account', 'sk-open-account'])
      expect(records.map((r) => [r.errorKind, r.decision, r.delayMs, r.reason])).toEqual([
        [state.kind, 'retry', 0, state.reason],
        [undefined, 'success', undefined, undefined],
      ])
    })
  }
})
