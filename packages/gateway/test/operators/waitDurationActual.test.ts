import { ManualClock } from '@hourglass/core'
import { type LlmAdmissionMessage, llmChannels } from '@hourglass/llm'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { until } from '../../../../test/support/until.js'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/** The sum and count of `hourglass_gateway_wait_duration_seconds` for `reason`. */
async function waitHistogram(url: string, reason: string) {
  const page = await (await fetch(`${url}/metrics`)).text()
  const read = (suffix: string) => {
    const line = page
      .split('\n')
      .find(
        (l) =>
          l.startsWith(`hourglass_gateway_wait_duration_seconds_${suffix}{`) &&
          l.includes(`reason="${reason}"`),
      )
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return { sum: read('sum'), count: read('count') }
}

/**
 * `hourglass_gateway_wait_duration_seconds` is how long requests were held
 * back before sending: a wait the caller cut short lasted until it left, not
 * the window's reset it was planned to last until.
 */
describe('the wait histogram', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  it('records the time a request actually waited for an RPM window, not the planned wait, when its client leaves', async () => {
    const clock = new ManualClock()
    const provider = await fakeProvider('openai', ['sk-wait'], { limits: { rpm: 1 } })
    fake = provider.fake
    fake.setReply(reply.text('ok'))
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'x']) } },
      { clock, drainTimeoutMs: 0 },
    )
    const ask = (signal?: AbortSignal) =>
      harness!.client.chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: 'x' }] },
        { headers: { 'x-deadline-remaining-ms': '120000' }, ...(signal ? { signal } : {}) },
      )
    expect((await ask()).choices[0]?.message.content).toBe('ok')

    // The second finds the minute's one request spent and waits for the window.
    const left = new AbortController()
    const planned: number[] = []
    const onAdmission = (m: LlmAdmissionMessage) => {
      if (m.action !== 'wait') return
      planned.push(m.waitMs)
      // Once its timer is set: 5 s pass, then the client gives up.
      setImmediate(() => {
        clock.advance(5000)
        left.abort()
      })
    }
    llmChannels.admission.subscribe(onAdmission)
    try {
      await expect(ask(left.signal)).rejects.toThrow()
    } finally {
      llmChannels.admission.unsubscribe(onAdmission)
    }
    expect(planned).toHaveLength(1)
    expect(planned[0]).toBeGreaterThan(5000)
    expect(fake.requests).toHaveLength(1)

    await until(
      async () => (await waitHistogram(harness!.url, 'rpm')).count === 1,
      5000,
      'the wait recorded',
    )
    // 5 s waited, not the planned wait (about the whole minute).
    expect((await waitHistogram(harness.url, 'rpm')).sum).toBe(5)
  })
})
