import diagnostics from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { anthropicErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAdmissionMessage, llmChannels } from '../../src/channels.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
let listener: ((message: unknown) => void) | undefined
afterEach(() => {
  if (listener) diagnostics.unsubscribe(llmChannels.admission.name, listener)
  listener = undefined
})

/** Resolves when admission starts waiting for a cooldown (the timer is set by then). */
function nextAdmissionWait(): Promise<LlmAdmissionMessage> {
  return new Promise((resolve) => {
    listener = (message) => {
      if ((message as LlmAdmissionMessage).action === 'wait')
        resolve(message as LlmAdmissionMessage)
    }
    diagnostics.subscribe(llmChannels.admission.name, listener)
  })
}

describe('with no fallback, the documented waits apply', () => {
  it('an overload without a hint waits 5–10 s (on the deadline’s clock) before the same model is tried again', async () => {
    const clock = new ManualClock()
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(anthropicErrors.overloaded(), reply.text('after the overload'))
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(15_000, { clock })
    const waiting = nextAdmissionWait()
    const call = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 16 },
      deadline,
      onAttempt: (r) => records.push(r),
    })
    const { waitMs } = await waiting
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'retry', errorKind: 'overloaded' })
    expect(records[0]?.delayMs).toBeGreaterThanOrEqual(5000)
    expect(records[0]?.delayMs).toBeLessThanOrEqual(10_000)
    expect(records[0]?.reason).toMatch(/retry 2 of 3 after \d+ ms \(overload\)/)
    expect(waitMs).toBeCloseTo(records[0]?.delayMs as number, -1)
    expect(fake.requests).toHaveLength(1) // nothing goes before the wait is over
    clock.advance(10_000)
    const answer = await call
    expect(answer.text).toBe('after the overload')
    expect(fake.requests).toHaveLength(2)
    expect(records[1]?.choice).toMatch(
      /^retry 2 of 3 on this model; waited \d+ ms for the provider's limits$/,
    )
  })
})
