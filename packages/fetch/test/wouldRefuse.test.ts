import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'

// `fetch.wouldRefuse()` says beforehand what a call made now would do: fail
// at once with nothing sent. llm relies on it to mark such an attempt
// `sent: false` (the error alone cannot tell it from one cut in flight), so
// it must be the call's own check, with this fetch's own `minBudgetMs` —
// not a copy that assumes the default.

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

async function setup(minBudgetMs?: number): Promise<{ fetch: HourglassFetch; up: FaultServer }> {
  const up = await faultServer({ type: 'respond', body: 'ok' })
  const fetch = createFetch(minBudgetMs === undefined ? {} : { minBudgetMs })
  open.push(up, fetch)
  return { fetch, up }
}

/** What a call through the fetch's dispatcher (as llm's adapters send) actually did. */
async function sendThrough(fetch: HourglassFetch, up: FaultServer, deadline: Deadline) {
  const before = up.records.length
  const outcome = await request(up.url, { dispatcher: fetch.dispatcher, deadline } as never).then(
    async (res) => {
      await res.body.text()
      return 'answered'
    },
    () => 'failed',
  )
  return { outcome, sent: up.records.length - before }
}

describe('fetch.wouldRefuse()', () => {
  it('agrees with the call, at this fetch’s own minBudgetMs', async () => {
    const { fetch, up } = await setup(50)
    const clock = new ManualClock()
    using short = Deadline.after(30, { clock })
    expect(fetch.wouldRefuse({ deadline: short })).toBe(true)
    expect(await sendThrough(fetch, up, short)).toEqual({ outcome: 'failed', sent: 0 })

    using enough = Deadline.after(80, { clock })
    expect(fetch.wouldRefuse({ deadline: enough })).toBe(false)
    expect(await sendThrough(fetch, up, enough)).toEqual({ outcome: 'answered', sent: 1 })
  })

  it('the default minBudgetMs (5): 3 ms left is refused, 0 as the option lets it through', async () => {
    const clock = new ManualClock()
    using deadline = Deadline.after(3, { clock })
    const byDefault = await setup()
    expect(byDefault.fetch.wouldRefuse({ deadline })).toBe(true)
    const none = await setup(0)
    expect(none.fetch.wouldRefuse({ deadline })).toBe(false)
    clock.advance(3)
    expect(none.fetch.wouldRefuse({ deadline })).toBe(true)
  })

  it('an aborted signal is refused; no deadline and no signal is not', async () => {
    const { fetch } = await setup()
    const controller = new AbortController()
    expect(fetch.wouldRefuse()).toBe(false)
    expect(fetch.wouldRefuse({ signal: controller.signal })).toBe(false)
    controller.abort()
    expect(fetch.wouldRefuse({ signal: controller.signal })).toBe(true)
  })

  it('reads currentDeadline() when given none, as the call does', async () => {
    const { fetch } = await setup()
    using deadline = Deadline.after(2, { clock: new ManualClock() })
    expect(runWithDeadline(deadline, () => fetch.wouldRefuse())).toBe(true)
    expect(fetch.wouldRefuse()).toBe(false)
  })

  it('an observe-only deadline: its expiry refuses nothing, its cancel does', async () => {
    const { fetch } = await setup()
    const clock = new ManualClock()
    using deadline = Deadline.after(10, { clock, observe: true })
    clock.advance(10)
    expect(fetch.wouldRefuse({ deadline })).toBe(false)
    deadline.cancel(new Error('client left'))
    expect(fetch.wouldRefuse({ deadline })).toBe(true)
  })
})
