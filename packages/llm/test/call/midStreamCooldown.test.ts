import diagnostics from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { anthropicErrors, qwenErrors, reply } from '@hourglass/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmCooldownMessage, llmChannels } from '../../src/channels.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import type { StreamEvent } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 64 }

const cooldowns: LlmCooldownMessage[] = []
const onCooldown = (message: unknown) => cooldowns.push(message as LlmCooldownMessage)
beforeEach(() => {
  cooldowns.length = 0
  diagnostics.subscribe(llmChannels.cooldown.name, onCooldown)
})
afterEach(() => {
  diagnostics.unsubscribe(llmChannels.cooldown.name, onCooldown)
})

/** Admission and deadlines on one manual clock: nothing here waits for real time. */
function manual() {
  const clock = new ManualClock(1_000)
  const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
  return { clock, admission }
}

async function drain(
  stream: AsyncIterable<StreamEvent>,
): Promise<{ text: string; error?: unknown }> {
  let text = ''
  try {
    for await (const event of stream) if (event.type === 'text') text += event.text
    return { text }
  } catch (error) {
    return { text, error }
  }
}

/**
 * A rate limit or overload that arrives as an SSE error frame after the first
 * token still ends the call with `StreamInterruptedError` (nothing is resent
 * once tokens were delivered), but it is a limit like any other: the key (or
 * the provider) cools down for the calls after it. Before, the permit had
 * already reported an answer at the first token, the later limit was dropped,
 * and the next call went straight back to the limited key or provider.
 */
describe('a limit in an error frame after the first token cools the key or provider', () => {
  it('qwen: Throttling mid-stream cools that key: the next call goes to the other key, a cooldown event is published', async () => {
    const { clock, admission } = manual()
    const fake = await fakes.start({ dialect: 'qwen' })
    fake.enqueue(qwenErrors.throttlingInStream({ afterTokens: 2, text: 'one two three four' }))
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['q-1', 'q-2'],
        model: 'qwen-plus',
        dialect: 'qwen',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const stream = callModel({
      models: [model],
      request: { ...request, stream: true },
      deadline,
      limits: { admission },
    })
    const { text, error } = await drain(stream)
    expect(isStreamInterrupted(error)).toBe(true)
    expect((error as Error).cause).toMatchObject({ kind: 'rate_limited' })
    expect(text.length).toBeGreaterThan(0)
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['q-1'])
    expect(cooldowns.map((c) => [c.state, c.scope, c.model])).toEqual([
      ['start', 'model', 'qwen-plus'],
    ])

    const next = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(next.text).toBe('Hello from the fake provider.')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['q-1', 'q-2'])
    expect(clock.now()).toBe(1_000)
  })

  it('anthropic: overloaded_error mid-stream cools the provider: a call that cannot wait is refused with nothing sent', async () => {
    const { clock, admission } = manual()
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(anthropicErrors.overloadedInStream({ afterTokens: 2, text: 'one two three four' }))
    const opus = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKeys: ['a-1', 'a-2'], model: 'claude-opus-4-6' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const { error } = await drain(
      callModel({
        models: [opus],
        request: { ...request, stream: true },
        deadline,
        limits: { admission },
      }),
    )
    expect(isStreamInterrupted(error)).toBe(true)
    expect((error as Error).cause).toMatchObject({ kind: 'overloaded' })
    expect(cooldowns.map((c) => [c.state, c.scope, c.keyId])).toEqual([['start', 'provider', '*']])

    // An overload's cooldown (5–10 s) does not fit in 3 s: refused at once,
    // neither key sent to.
    using short = Deadline.after(3_000, { clock })
    const refused = await callModel({
      models: [opus],
      request,
      deadline: short,
      limits: { admission },
    })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(isRateLimited(refused)).toBe(true)
    expect(fake.requests).toHaveLength(1)

    // Once the cooldown is over, the provider answers again.
    clock.advance(10_001)
    using later = Deadline.after(3_000, { clock })
    const answer = await callModel({
      models: [opus],
      request,
      deadline: later,
      limits: { admission },
    })
    expect(answer.text).toBe('Hello from the fake provider.')
  })

  it('a stream cut mid-answer without a limit (a dropped connection) starts no cooldown', async () => {
    const { clock, admission } = manual()
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(reply.text('one two three four', { cutAfterTokens: 2 }))
    const opus = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'a-1', model: 'claude-opus-4-6' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const { error } = await drain(
      callModel({
        models: [opus],
        request: { ...request, stream: true },
        deadline,
        limits: { admission },
      }),
    )
    expect(isStreamInterrupted(error)).toBe(true)
    expect(cooldowns).toEqual([])
    const answer = await callModel({ models: [opus], request, deadline, limits: { admission } })
    expect(answer.text).toBe('Hello from the fake provider.')
  })
})
