import { Deadline, ManualClock, messageOf } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { describe, expect, it, vi } from 'vitest'
import { revokedProxy, unreadableMessageError } from '../../../../test/support/unreadableValues.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

/**
 * A caller stops a call with whatever it aborts its controller with. Two
 * reasons whose message cannot be read went wrong: a revoked Proxy (any look
 * at it throws, `instanceof` too) made the whole answer's call reject with
 * llm's own "Cannot perform getPrototypeOf on a proxy that has been revoked"
 * (the attempt's record read its class); and on a stream, undici destroyed
 * the answer's body with the raw reason, which Node cannot do for the Proxy
 * or an Error whose `message` getter throws (it reads `stack`): an uncaught
 * TypeError out of undici's abort listener.
 */
const unreadable: [string, () => unknown][] = [
  ['an Error whose message getter throws', unreadableMessageError],
  ['a revoked Proxy', revokedProxy],
]

const fakes = useFakes()

async function started(stream: boolean) {
  // A token each second of a clock that never moves: the answer stays open.
  const fake = await fakes.start({
    dialect: 'openai',
    clock: new ManualClock(),
    reply: reply.text('one two three', { tokenDelayMs: 1000 }),
  })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'p' }),
  )
  const controller = new AbortController()
  const call = callModel({
    models: [model],
    request: { messages: [user('count')], maxTokens: 16, stream },
    deadline: Deadline.after(60_000),
    signal: controller.signal,
    retry: { maxAttempts: 1, budgets: false },
    limits: { admission: false },
  })
  return { fake, controller, call }
}

/** 'the reason' when `pending` rejected with it; else what it did, readable (vitest's diff throws on these values). */
async function outcome(pending: Promise<unknown>, reason: unknown): Promise<string> {
  const got = await pending.then(
    () => ({ resolved: true, error: undefined }),
    (error: unknown) => ({ resolved: false, error }),
  )
  if (got.resolved) return 'resolved'
  return got.error === reason ? 'the reason' : messageOf(got.error)
}

describe("a call stopped by its caller's signal with a reason whose message cannot be read rejects with that reason", () => {
  it.each(unreadable)('a whole answer (%s)', async (_, make) => {
    const reason = make()
    const { fake, controller, call } = await started(false)
    const result = outcome(Promise.resolve(call), reason)
    await vi.waitFor(() => expect(fake.requests).toHaveLength(1), { timeout: 10_000 })
    controller.abort(reason)
    expect(await result).toBe('the reason')
  })

  it.each(unreadable)('a stream, after its first token (%s)', async (_, make) => {
    const reason = make()
    const { controller, call } = await started(true)
    const read = (async () => {
      for await (const event of call as unknown as AsyncIterable<{ type: string }>) {
        if (event.type === 'text') controller.abort(reason)
      }
    })()
    expect(await outcome(read, reason)).toBe('the reason')
  })

  // Before a token the stream's failure took the ProviderError check, whose
  // `instanceof` a revoked Proxy throws out of: llm's TypeError, not the reason.
  it.each(unreadable)('a stream, before its first token (%s)', async (_, make) => {
    const reason = make()
    const fake = await fakes.start({ dialect: 'openai', reply: reply.hang() })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'p' }),
    )
    const controller = new AbortController()
    const call = callModel({
      models: [model],
      request: { messages: [user('count')], maxTokens: 16, stream: true },
      deadline: Deadline.after(60_000),
      signal: controller.signal,
      retry: { maxAttempts: 1, budgets: false },
      limits: { admission: false },
    })
    const read = (async () => {
      for await (const _event of call as unknown as AsyncIterable<unknown>) {
        // nothing comes
      }
    })()
    await vi.waitFor(() => expect(fake.requests).toHaveLength(1), { timeout: 10_000 })
    controller.abort(reason)
    expect(await outcome(read, reason)).toBe('the reason')
  })
})
