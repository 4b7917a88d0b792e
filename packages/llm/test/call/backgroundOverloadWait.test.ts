import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { drive, pause, WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 8 }
// OpenAI's overloaded 503, asking 2 s.
const overloaded = reply.error(
  503,
  {
    error: {
      message: 'The engine is currently overloaded, please try again later',
      type: 'server_error',
    },
  },
  { 'retry-after': '2' },
)

// README: "`retry.priority` … `'background'` fails at once on overload instead of adding load".
// A background call that came while the provider cooled after another call's overload waited the
// cooldown out and was sent at recovery, before the foreground calls that came after it.
describe('background work and an overload another call met', () => {
  it('is refused at once, sends nothing, and the foreground calls go first at recovery', async () => {
    const clock = new WaitClock()
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('ok'), clock })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-4o-mini' }),
    )
    const admission = new Admission({ clock, defaultNeededMs: 100 })
    fake.enqueue(overloaded)
    const call = async (priority: 'foreground' | 'background', arriveMs: number) => {
      await pause(clock, arriveMs)
      const deadline = Deadline.after(10_000, { clock })
      const startedAt = clock.now()
      try {
        await callModel({
          models: [model],
          request,
          deadline,
          retry: { priority },
          limits: { admission },
        })
        return { priority, ok: true as const, at: clock.now(), waitedMs: clock.now() - startedAt }
      } catch (error) {
        return {
          priority,
          ok: false as const,
          error,
          at: clock.now(),
          waitedMs: clock.now() - startedAt,
        }
      } finally {
        deadline.dispose()
      }
    }
    const settled = await drive(clock, [
      call('foreground', 0), // meets the 503: the provider cools for 2 s
      call('background', 100),
      call('background', 101),
      call('foreground', 200),
      call('foreground', 201),
    ])
    const results = settled.map((s) => {
      if (s.status === 'rejected') throw s.reason
      return s.value
    })
    const background = results.filter((r) => r.priority === 'background')
    for (const r of background) {
      expect(r.ok).toBe(false)
      expect(isRateLimited(r.error)).toBe(true)
      expect((r.error as { kind?: string }).kind).toBe('overloaded')
      expect(r.waitedMs).toBe(0) // refused at once, not after the cooldown
    }
    expect(results.filter((r) => r.priority === 'foreground').every((r) => r.ok)).toBe(true)
    // The 503, the probe at 2 s, the two foreground followers: nothing sent for background work.
    expect(fake.requests).toHaveLength(4)
  })
})
