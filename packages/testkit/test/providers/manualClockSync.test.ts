import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type FakeProvider,
  type ReplyScript,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

// docs/providers.md "With a ManualClock": waitForRequests resolves before a
// function script's or a stream's first timer is on the clock; waiting for
// clock.pendingTimers first is the documented way to advance past it.
describe('a fake on a ManualClock, as documented', () => {
  const cases: [string, ReplyScript, boolean][] = [
    ['a fixed reply', reply.text('a', { latencyMs: 1000 }), false],
    ['a function script', () => reply.text('a', { latencyMs: 1000 }), false],
    ['a stream with firstTokenDelayMs', reply.text('a', { firstTokenDelayMs: 1000 }), true],
  ]
  for (const [name, script, stream] of cases) {
    it(`${name}: wait for the timer, then advance`, async () => {
      const clock = new ManualClock()
      fake = await startFakeProvider({ clock })
      fake.enqueue(script)
      const answer = fetch(`${fake.baseURL}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }),
      }).then((res) => res.text())
      await fake.waitForRequests(1)
      await expect.poll(() => clock.pendingTimers).toBe(1)
      clock.advance(1000)
      expect(await answer).toContain('"a"')
      expect(fake.requests[0]?.outcome).toBe('success')
    })
  }
})
