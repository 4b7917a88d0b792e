import diagnostics from 'node:diagnostics_channel'
import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { defaultCooldownMs } from '../../src/admission/defaultCooldownMs.js'
import { classify, cooldownScopeOf } from '../../src/admission/slot.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmCooldownMessage, llmChannels } from '../../src/channels.js'
import { decideRetry } from '../../src/retry/decideRetry.js'
import { retryDelay } from '../../src/retry/retryDelay.js'
import type { ErrorKind, NormalizedError } from '../../src/types.js'
import { driveOne, WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }
const zero = () => 0

/** What OpenAI sends when it is overloaded: a 503 labelled `server_error`. */
const OPENAI_OVERLOADED = {
  error: {
    message: 'The engine is currently overloaded, please try again later',
    type: 'server_error',
    param: null,
    code: null,
  },
}

const failure = (kind: ErrorKind, status: number): NormalizedError => ({
  kind,
  retryable: true,
  status,
  message: kind,
})

let cooldownListener: ((message: unknown) => void) | undefined
afterEach(() => {
  if (cooldownListener) diagnostics.unsubscribe(llmChannels.cooldown.name, cooldownListener)
  cooldownListener = undefined
})

describe('one test of "rate limit or overload", shared by retry and admission', () => {
  it('a 503 or 529 labelled server_error (a custom adapter’s, or decideRetry used alone) is an overload to every part', () => {
    for (const status of [503, 529]) {
      const error = failure('server_error', status)
      // Admission: a provider-wide cooldown of the overload's 5–10 s.
      expect(classify({ ok: false, error })).toBe('cooldown')
      expect(cooldownScopeOf(error)).toBe('provider')
      expect(defaultCooldownMs({ kind: error.kind, status, strikes: 1 }, zero)).toBe(5000)
      // The delay: the overload wait, not a backoff step.
      expect(retryDelay({ attempt: 1, error, random: zero })).toEqual({
        delayMs: 5000,
        source: 'overload',
      })
      // The decision: the overload rules apply.
      expect(decideRetry({ error, attempt: 1, priority: 'background' })).toMatchObject({
        action: 'fail',
        reason: expect.stringMatching(/background work fails at once on overload/),
      })
      expect(decideRetry({ error, attempt: 1, max529Retries: 0, hasFallback: true })).toMatchObject(
        { action: 'fallback', reason: expect.stringMatching(/more than max529Retries \(0\)/) },
      )
      // The earliest answer: a ready fallback is taken now, not after a wait here.
      const ready = { label: 'claude-x@anthropic', waitMs: 0, latencyMs: undefined }
      expect(
        decideRetry({ error, attempt: 1, hasFallback: true, fallback: ready, random: zero }),
      ).toMatchObject({
        action: 'fallback',
        reason: expect.stringMatching(/is expected to answer before this model/),
      })
    }
  })

  it('a 429 labelled server_error is a rate limit to every part; a refusal of the request on a 429 is no limit to any', () => {
    const limited = failure('server_error', 429)
    expect(classify({ ok: false, error: limited })).toBe('cooldown')
    expect(cooldownScopeOf(limited)).toBe('model')
    const ready = { label: 'b@other', waitMs: 0, latencyMs: undefined }
    expect(
      decideRetry({ error: limited, attempt: 1, hasFallback: true, fallback: ready }).action,
    ).toBe('fallback')
    // The retry path never retries a bad request; admission no longer cools the model for it.
    const refused = { ...failure('bad_request', 429), retryable: false }
    expect(decideRetry({ error: refused, attempt: 1, hasFallback: true }).action).toBe('fail')
    expect(classify({ ok: false, error: refused })).toBe('answered')
  })
})

describe('OpenAI’s overloaded 503 (type server_error) through callModel', () => {
  async function primaryAndBackup() {
    const openaiFake = await fakes.start({ dialect: 'openai', models: ['gpt-4o'] })
    const anthropicFake = await fakes.start({ dialect: 'anthropic' })
    openaiFake.setReply(reply.text('from openai'))
    anthropicFake.setReply(reply.text('from anthropic'))
    openaiFake.enqueue(reply.error(503, OPENAI_OVERLOADED))
    const primary = fakes.adapter(
      openAICompatible({ baseURL: openaiFake.baseURL, apiKey: 'sk-openai', model: 'gpt-4o' }),
    )
    const backup = fakes.adapter(
      anthropic({ baseURL: anthropicFake.baseURL, apiKey: 'sk-ant', model: 'claude-x' }),
    )
    return { openaiFake, anthropicFake, primary, backup }
  }

  it('falls back to a ready model at once (no wait, nothing resent), and cools the provider for an overload', async () => {
    const { openaiFake, anthropicFake, primary, backup } = await primaryAndBackup()
    const clock = new WaitClock()
    const admission = new Admission({ clock, random: zero })
    const cooldowns: LlmCooldownMessage[] = []
    cooldownListener = (m) => cooldowns.push(m as LlmCooldownMessage)
    diagnostics.subscribe(llmChannels.cooldown.name, cooldownListener)
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(5000, { clock })
    const started = clock.now()
    const answer = await driveOne(
      clock,
      callModel({
        models: [primary, backup],
        request,
        deadline,
        limits: { admission },
        onAttempt: (r) => records.push(r),
      }),
    )
    expect(answer.text).toBe('from anthropic')
    expect(clock.now()).toBe(started) // no wait was taken on the clock
    expect(openaiFake.requests).toHaveLength(1)
    expect(anthropicFake.requests).toHaveLength(1)
    expect(records[0]).toMatchObject({
      decision: 'fallback',
      status: 503,
      errorKind: 'overloaded',
      reason: expect.stringMatching(
        /^overloaded \(HTTP 503, server_error\): claude-x@anthropic ~0 ms \(ready, no latency history\) is expected to answer before this model ~5000 ms/,
      ),
    })
    expect(records[1]).toMatchObject({ decision: 'success', model: 'claude-x' })
    // The cooldown says what it is: an overload, for the overload's wait.
    expect(cooldowns).toEqual([
      expect.objectContaining({
        provider: 'openai',
        scope: 'provider',
        state: 'start',
        reason: 'overloaded (503), overload wait',
      }),
    ])
  })

  it('background work fails at once on it, as on any overload', async () => {
    const { openaiFake, anthropicFake, primary, backup } = await primaryAndBackup()
    const clock = new WaitClock()
    using deadline = Deadline.after(5000, { clock })
    const error = await driveOne(
      clock,
      callModel({
        models: [primary, backup],
        request,
        deadline,
        retry: { priority: 'background' },
        limits: { admission: new Admission({ clock, random: zero }) },
      }),
    ).catch((e: unknown) => e)
    expect((error as { reason?: string }).reason).toMatch(
      /background work fails at once on overload/,
    )
    expect(openaiFake.requests).toHaveLength(1)
    expect(anthropicFake.requests).toHaveLength(0)
  })
})

describe('the earliest-answer rule compares what its reason shows', () => {
  const overloaded = failure('overloaded', 529)
  const expectedFigures = /~(\d+) ms \([^)]*\) is expected to answer before this model ~(\d+) ms/

  it('a fallback expected at the same whole millisecond is a tie: the list’s order is kept, no "before" with equal figures', () => {
    // Two forecasts of one provider-wide cooldown, read a moment apart.
    for (const [here, there] of [
      [9631.4, 9631.4],
      [9631.6, 9631.2],
    ] as const) {
      const decision = decideRetry({
        error: overloaded,
        attempt: 1,
        hasFallback: true,
        waitMs: here,
        fallback: { label: 'gpt-4o-mini@openai', waitMs: there, latencyMs: undefined },
        remainingMs: 60_000,
        random: zero,
      })
      expect(decision).toMatchObject({ action: 'retry', delayMs: 9632 })
    }
  })

  it('whenever it falls back for the earliest answer, the fallback’s figure is lower than this model’s', () => {
    const decision = decideRetry({
      error: overloaded,
      attempt: 1,
      hasFallback: true,
      waitMs: 9631.4,
      fallback: { label: 'gpt-4o-mini@openai', waitMs: 9630.2, latencyMs: undefined },
      remainingMs: 60_000,
    })
    expect(decision.action).toBe('fallback')
    const [, there, here] = expectedFigures.exec(decision.reason) ?? []
    expect(Number(there)).toBeLessThan(Number(here))
  })
})
