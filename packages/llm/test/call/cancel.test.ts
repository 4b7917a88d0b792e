import { Deadline } from '@hourglass/core'
import { openAIErrors, type ProviderReply, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { watchLoopStalls } from '../../../../test/support/loopStalls.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16, stream: true as const }
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A stream whose first attempt fails with `first` (then the provider
 * answers), and a promise that resolves once the call decided to wait for a
 * retry: from then on it sleeps in a backoff, an overload wait or
 * admission's cooldown.
 */
async function waitingStream(first: ProviderReply, options: Partial<CallModelOptions>) {
  const fake = await fakes.start({ dialect: 'openai' })
  fake.enqueue(first)
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
  )
  let waiting!: () => void
  const decided = new Promise<void>((resolve) => {
    waiting = resolve
  })
  const stream = callModel(
    Object.assign(
      {
        models: [model],
        request,
        deadline: Deadline.after(30_000),
        retry: { budgets: false as const },
        onAttempt: (r: { decision: string }) => {
          if (r.decision === 'retry') waiting()
        },
      },
      options,
    ),
  )
  await decided
  await sleep(50) // well inside the wait, whichever it is
  return { fake, stream }
}

describe('a stream’s cancel ends the call’s waits at once, as the caller’s signal does', () => {
  it.each([
    [
      'a backoff after a 500',
      openAIErrors.serverError(),
      {
        limits: { admission: false as const },
        retry: { budgets: false as const, delay: { baseDelayMs: 5000 } },
      },
    ],
    [
      'an overload wait (a 503 without a hint: 5–10 s)',
      reply.error(503, { error: { message: 'The server is overloaded.' } }),
      { limits: { admission: false as const } },
    ],
    [
      'admission’s cooldown after a 429 `retry-after: 4`',
      openAIErrors.rateLimited({ retryAfterS: 4 }),
      { limits: { admission: new Admission() } },
    ],
  ])(
    'cancelled during %s: `result` rejects with the reason at once, nothing more is sent',
    async (_, first, options) => {
      const { fake, stream } = await waitingStream(first, options)
      const reason = new Error('user cancelled')
      const started = performance.now()
      // Less any time a loaded box kept this process from running meanwhile:
      // not cancelled, the call would sit out its wait (4–10 s).
      const stalls = watchLoopStalls()
      stream.cancel(reason)
      await expect(stream.result).rejects.toBe(reason)
      expect(performance.now() - started - stalls.stop()).toBeLessThan(500)
      await sleep(50)
      expect(fake.requests).toHaveLength(1)
    },
  )

  it('the caller’s signal aborted after the first token: the stream ends with its reason as it is', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('one two three four five six', { tokenDelayMs: 40 }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const controller = new AbortController()
    const reason = new Error('caller gone')
    const stream = callModel({ models: [model], request, signal: controller.signal })
    let thrown: unknown
    let text = ''
    try {
      for await (const event of stream) {
        if (event.type !== 'text') continue
        text += event.text
        controller.abort(reason)
      }
    } catch (error) {
      thrown = error
    }
    expect(text.length).toBeGreaterThan(0)
    expect(thrown).toBe(reason)
    await expect(stream.result).rejects.toBe(reason)
    expect(fake.requests).toHaveLength(1)
  })

  it('a caller’s signal already aborted: the stream sends nothing and ends with its reason', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const reason = new Error('too late')
    const stream = callModel({ models: [model], request, signal: AbortSignal.abort(reason) })
    await expect(stream.result).rejects.toBe(reason)
    expect(fake.requests).toHaveLength(0)
  })
})
