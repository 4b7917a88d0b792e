import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  anthropicErrors,
  type FakeProvider,
  openAIErrors,
  startFakeProvider,
} from '../../src/providers/index.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

describe('openAIErrors.rateLimited headers', () => {
  it('bare: retry-after 1, as the message says', () => {
    const r = openAIErrors.rateLimited()
    expect(r.headers).toMatchObject({ 'retry-after': '1', 'x-ratelimit-reset-requests': '1s' })
    expect(JSON.stringify(r.body)).toContain('Please try again in 1s.')
  })

  it('retryAfterMs alone: retry-after in whole seconds, rounded up, beside retry-after-ms', () => {
    expect(openAIErrors.rateLimited({ retryAfterMs: 2500 }).headers).toMatchObject({
      'retry-after': '3',
      'retry-after-ms': '2500',
      'x-ratelimit-reset-requests': '2.5s',
    })
    expect(openAIErrors.rateLimited({ retryAfterMs: 10 }).headers).toMatchObject({
      'retry-after': '1',
      'retry-after-ms': '10',
      'x-ratelimit-reset-requests': '10ms',
    })
  })

  it('both x-ratelimit sets, whichever limit is spent', () => {
    const tokens = openAIErrors.rateLimited({ limit: 'tokens', retryAfterS: 6 }).headers
    expect(tokens).toMatchObject({
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '6s',
      'x-ratelimit-limit-requests': '500',
    })
    expect(Number(tokens?.['x-ratelimit-remaining-requests'])).toBeGreaterThan(0)
    const requests = openAIErrors.rateLimited().headers
    expect(requests).toMatchObject({ 'x-ratelimit-remaining-requests': '0' })
    expect(Number(requests?.['x-ratelimit-remaining-tokens'])).toBeGreaterThan(0)
  })

  it('the reset never reads 60s in a minute: 119999.9 ms is 2m0s', () => {
    const r = openAIErrors.rateLimited({ retryAfterMs: 119_999.9 })
    expect(r.headers?.['x-ratelimit-reset-requests']).toBe('2m0s')
    expect(JSON.stringify(r.body)).toContain('Please try again in 2m0s.')
  })
})

describe('anthropicErrors.rateLimited resets', () => {
  it('are stamped when sent, on the fake’s clock: advancing it moves them', async () => {
    const clock = new ManualClock()
    fake = await startFakeProvider({ dialect: 'anthropic', clock })
    fake.rateLimit({ forMs: 60_000 })
    fake.enqueue(anthropicErrors.rateLimited({ retryAfterS: 3 }))
    const send = async () => {
      const res = await fetch(`${fake!.baseURL}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'm', max_tokens: 5, messages: [] }),
      })
      expect(res.status).toBe(429)
      return ['requests', 'input-tokens', 'output-tokens', 'tokens'].map((kind) =>
        Date.parse(res.headers.get(`anthropic-ratelimit-${kind}-reset`)!),
      )
    }
    // The window's default reply: 60 s after it is sent.
    const windowed = await send()
    // An hour later on the fake's clock, not the system's: the queued reply.
    clock.advance(3_600_000)
    const queued = await send()
    expect(new Set(windowed).size).toBe(1)
    expect(new Set(queued).size).toBe(1)
    expect(queued[0]! - windowed[0]!).toBe(3_600_000 - 60_000 + 3_000)
    expect(queued[0]!).toBeGreaterThan(Date.now() + 3_000_000)
  })
})
