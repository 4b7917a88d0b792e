import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { CooldownStore } from '../../src/admission/CooldownStore.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { callModel } from '../../src/call/callModel.js'
import { driveOne, WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

// The docs say what a hook throws is ignored. An async hook throws by
// returning a rejected promise: nobody awaited it, so it was an unhandled
// rejection — which ends a Node process (`--unhandled-rejections=throw`, the
// default since Node 15).

const fakes = useFakes()
const unhandled: unknown[] = []
const onUnhandled = (reason: unknown) => unhandled.push(reason)
beforeEach(() => {
  unhandled.length = 0
  process.on('unhandledRejection', onUnhandled)
})
afterEach(() => {
  process.off('unhandledRejection', onUnhandled)
})

/** One turn of the event loop: Node reports unhandled rejections after the microtasks drain. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('an async hook that rejects changes nothing and crashes nothing', () => {
  it('onAttempt: the call answers, the rejection is handled', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    let calls = 0
    const answer = await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 10 },
      limits: { admission: false },
      onAttempt: async () => {
        calls++
        throw new Error('log shipper down')
      },
    })
    await turn()
    expect(answer.text).toBe('Hello from the fake provider.')
    expect(calls).toBe(1)
    expect(unhandled).toEqual([])
  })

  it('onAttempt: a thenable it returns gets a rejection handler', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    let handlers = 0
    await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 10 },
      limits: { admission: false },
      onAttempt: () => ({
        // biome-ignore lint/suspicious/noThenProperty: a thenable that is no Promise is what this test hands over
        then(_resolve: unknown, reject: unknown) {
          if (typeof reject === 'function') handlers++
        },
      }),
    })
    expect(handlers).toBe(1)
  })

  it('onAttempt handing back one pending promise on every call: one handler, not one a call (each was kept)', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const pending = new Promise<void>(() => {})
    const then = vi.spyOn(pending, 'then')
    for (let i = 0; i < 3; i++) {
      await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 10 },
        limits: { admission: false },
        onAttempt: () => pending,
      })
    }
    expect(then).toHaveBeenCalledTimes(1)
  })

  it("ProviderLimits' onWait: admission waits for the reset and admits", async () => {
    const clock = new WaitClock()
    const epoch = Date.now()
    vi.spyOn(Date, 'now').mockImplementation(() => epoch + clock.now())
    let waits = 0
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 1 } },
      windowMs: 1000,
      onWait: async () => {
        waits++
        throw new Error('metrics down')
      },
    })
    const admission = new Admission({ limits, clock })
    ;(await admission.acquire({ provider: 'acme', tokens: 1 })).release()
    using deadline = Deadline.after(3000, { clock })
    const permit = await driveOne(
      clock,
      admission.acquire({ provider: 'acme', tokens: 1, deadline, neededMs: 0 }),
    )
    permit.release()
    await turn()
    expect(waits).toBe(1)
    expect(unhandled).toEqual([])
  })

  it("admission's logger: a cooldown store that fails is still reported, and nothing crashes", async () => {
    const store: CooldownStore = {
      remaining: () => Promise.reject(new Error('store down')),
      extend: () => Promise.reject(new Error('store down')),
    }
    const warned: string[] = []
    const admission = new Admission({
      store,
      clock: new ManualClock(),
      logger: {
        warn: async (message: string) => {
          warned.push(message)
          throw new Error('log shipper down')
        },
      },
    })
    await admission.report('acme', 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA', {
      ok: false,
      error: { kind: 'rate_limited', status: 429, retryAfterMs: 1000 },
    })
    await turn()
    expect(warned).toHaveLength(1)
    expect(warned[0]).toMatch(/cooldown store unavailable/)
    expect(unhandled).toEqual([])
  })
})
