import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { type LlmAdmissionMessage, llmChannels } from '../../src/channels.js'
import { isKeysRetired } from '../../src/errors/KeysRetiredError.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

const KEY_A = 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA'
const KEY_B = 'sk-live-BBBBBBBBBBBBBBBBBBBBBBBB'

// A refusal says what started it: a caller told "rate limited" during an
// overload's cooldown passed on a rate limit that was not its own; a call
// refused because every key is retired was published nowhere, so a
// fallback it took counted nowhere.

const published: LlmAdmissionMessage[] = []
const onAdmission = (message: LlmAdmissionMessage) => published.push(message)
beforeEach(() => llmChannels.admission.subscribe(onAdmission))
afterEach(() => {
  llmChannels.admission.unsubscribe(onAdmission)
  published.length = 0
})

async function refusal(
  outcome: { kind: 'overloaded' | 'rate_limited' | 'server_error' | 'auth'; status: number },
  hasFallback: boolean,
): Promise<unknown> {
  const clock = new ManualClock(1_000)
  const gate = new Admission({ clock, logger: { warn: () => {} } })
  for (const key of [KEY_A, KEY_B]) {
    await gate.report(
      'acme',
      key,
      { ok: false, error: { ...outcome, retryAfterMs: 30_000 } },
      { model: 'm' },
    )
  }
  // Awaited before `using` disposes the deadline: disposed while live, it
  // reads as one that never expires, and the gate would wait out the cooldown.
  using deadline = Deadline.after(5_000, { clock })
  return await gate
    .acquire({ provider: 'acme', model: 'm', keys: [KEY_A, KEY_B], deadline, hasFallback })
    .catch((e: unknown) => e)
}

describe('a refusal says why the cooldown started', () => {
  it('an overload’s provider-wide cooldown: kind overloaded', async () => {
    const error = await refusal({ kind: 'overloaded', status: 529 }, false)
    expect(isRateLimited(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'overloaded', limit: 'cooldown', retryAfterMs: 30_000 })
    expect(String((error as Error).message)).toMatch(/overload/)
  })

  it('an OpenAI 503 labelled server_error is an overload too', async () => {
    const error = await refusal({ kind: 'server_error', status: 503 }, false)
    expect(error).toMatchObject({ kind: 'overloaded' })
  })

  it('a rate limit on every key: kind rate_limited', async () => {
    const error = await refusal({ kind: 'rate_limited', status: 429 }, false)
    expect(error).toMatchObject({ kind: 'rate_limited', limit: 'cooldown' })
  })
})

describe('every key retired is published like any refusal', () => {
  it.each([
    [true, 'fallback'],
    [false, 'fail'],
  ] as const)('hasFallback %s: action %s', async (hasFallback, action) => {
    const error = await refusal({ kind: 'auth', status: 401 }, hasFallback)
    expect(isKeysRetired(error)).toBe(true)
    expect(published).toEqual([
      expect.objectContaining({
        provider: 'acme',
        action,
        cause: 'cooldown',
        waitMs: Number.POSITIVE_INFINITY,
      }),
    ])
  })
})
