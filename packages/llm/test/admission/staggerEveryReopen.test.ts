import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from '../call/support/fakes.js'
import { drive, pause, WaitClock } from '../support/waitClock.js'

const fakes = useFakes()
const STAGGER_MS = 100
const CALLS = 12
const LATENCY_MS = 5

const limited = () =>
  reply.error(
    429,
    { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } },
    { 'retry-after-ms': '1000' },
  )

/**
 * A key rate-limited twice: the first call's request meets a 429 (`retry-after-ms:
 * 1000`) and the others, arriving during that cooldown, wait in line. The probe
 * is answered; the first of its followers meets a second 429, so the rest —
 * most of them still in their stagger — wait for a second cooldown and a
 * second probe. Every time is on a manual clock (`drive`): the provider's
 * records are the waits admission took.
 */
async function twoCooldowns() {
  const clock = new WaitClock()
  let index = 0
  const fake = await fakes.start({
    dialect: 'openai',
    clock,
    // The first request, then the probe's first follower: 429. Everything else answers.
    reply: () => {
      const i = index++
      return i === 0 || i === 2 ? limited() : reply.text('ok', { latencyMs: LATENCY_MS })
    },
  })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-one', model: 'gpt-4o-mini' }),
  )
  const admission = new Admission({ clock, staggerMs: STAGGER_MS, defaultNeededMs: 50 })
  const settled = await drive(
    clock,
    Array.from({ length: CALLS }, async (_, i) => {
      await pause(clock, 10 * i) // the first call meets the 429; the others arrive while it cools
      using deadline = Deadline.after(10_000, { clock })
      return callModel({
        models: [model],
        request: { messages: [user(`question ${i}`)], maxTokens: 16 },
        deadline,
        retry: { budgets: false },
        limits: { admission },
      })
    }),
  )
  return { settled, requests: fake.requests }
}

describe('followers of every successful probe, not only the first', () => {
  it('are spread over staggerMs after a second cooldown too (they all went in the same instant)', async () => {
    const { settled, requests } = await twoCooldowns()
    expect(settled.every((r) => r.status === 'fulfilled')).toBe(true)
    expect(requests.map((r) => r.reply)).toEqual([
      'error',
      'text',
      'error',
      ...Array.from({ length: CALLS - 1 }, () => 'text'),
    ])
    // The second probe (the first request sent after the second 429), and the followers after it.
    const [secondProbe, ...followers] = requests.slice(3)
    const answeredAt = (secondProbe?.receivedAtMs as number) + LATENCY_MS
    const followerMs = followers.map((r) => Math.round(r.receivedAtMs - answeredAt))
    console.info(`after the second probe's answer, followers sent +[${followerMs.join(', ')}] ms`)
    expect(followerMs.every((ms) => ms >= 0)).toBe(true)
    // In line order, spread evenly over staggerMs: the n-th of N at n/N × staggerMs
    // (a ManualClock fires a wait at its very end; the figures above are
    // rounded to whole ms). Before, every one was sent at +0.
    expect(followerMs).toEqual(
      Array.from({ length: followers.length }, (_, n) =>
        Math.round((n * STAGGER_MS) / followers.length),
      ),
    )
  })
})
