import { getEventListeners } from 'node:events'
import { Deadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  createConnector,
  createFetch,
  deadlineInterceptor,
  type HourglassFetch,
} from '../src/index.js'
import { rejection } from './helpers.js'

// A fan-out — a dozen calls at once sharing one signal, such as a plan
// slice's — made Node print "MaxListenersExceededWarning: Possible
// EventTarget memory leak detected. 11 abort listeners added to
// [AbortSignal]": each attempt listened to the signal (and let go when it
// ended: noise, not a leak), where undici's own fetch raises the signal's
// listener cap first. Now an attempt does not listen to its own deadline's
// signal at all (the deadline's onDone already stops it), and raises the cap
// of any other signal as undici does. The calls wait on a server that never
// answers until the caller gives up: nothing here measures time.

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function hanging(): Promise<FaultServer> {
  const server = await faultServer({ type: 'hang' })
  closers.push(server)
  return server
}
function client(): HourglassFetch {
  const fetch = createFetch()
  closers.push(fetch)
  return fetch
}

/** Returns the MaxListenersExceededWarnings this process has emitted since it was called (their messages). */
function leakWarnings(): () => string[] {
  const spy = vi.spyOn(process, 'emitWarning')
  return () =>
    spy.mock.calls
      .map(([warning]) => warning)
      .filter((w): w is Error => w instanceof Error && w.name === 'MaxListenersExceededWarning')
      .map((w) => w.message)
}

const FAN_OUT = 12

describe('a dozen calls sharing one signal', () => {
  it("a plan slice's signal: no warning, and cancelling the slice still stops every call", async () => {
    const warnings = leakWarnings()
    const server = await hanging()
    const fetch = client()
    const deadline = Deadline.after(60_000)
    try {
      const plan = deadline.plan({ model: 1 })
      let calls: Promise<unknown>[] = []
      let listening = 0
      const run = plan.run('model', async (signal, slice) => {
        calls = Array.from({ length: FAN_OUT }, () => rejection(fetch(server.url, { signal })))
        await server.request(FAN_OUT - 1) // every call is in flight
        listening = getEventListeners(signal, 'abort').length
        slice.cancel(new Error('enough'))
        return Promise.all(calls)
      })
      await rejection(run)
      const errors = await Promise.all(calls)
      expect(errors.map((e) => (e as Error).message)).toEqual(Array(FAN_OUT).fill('enough'))
      expect(warnings()).toEqual([])
      // The calls hold no listener on it (the slice's own deadline stops
      // them): the one there is plan.run's.
      expect(listening).toBe(1)
    } finally {
      deadline.dispose()
    }
  })

  it('a signal of the caller’s own: no warning, every call stops on its abort, no listener left', async () => {
    const warnings = leakWarnings()
    const server = await hanging()
    const fetch = client()
    const caller = new AbortController()
    const calls = Array.from({ length: FAN_OUT }, () =>
      rejection(fetch(server.url, { signal: caller.signal })),
    )
    await server.request(FAN_OUT - 1)
    caller.abort(new Error('left'))
    const errors = await Promise.all(calls)
    expect(errors.map((e) => (e as Error).message)).toEqual(Array(FAN_OUT).fill('left'))
    expect(warnings()).toEqual([])
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0)
  })

  it("through deadlineInterceptor with undici's request(): no warning", async () => {
    const warnings = leakWarnings()
    const server = await hanging()
    const agent = new Agent({ connect: createConnector() })
    closers.push(agent)
    const dispatcher = agent.compose(deadlineInterceptor())
    const caller = new AbortController()
    const calls = Array.from({ length: FAN_OUT }, () =>
      rejection(request(server.url, { dispatcher, signal: caller.signal })),
    )
    await server.request(FAN_OUT - 1)
    caller.abort(new Error('left'))
    const errors = await Promise.all(calls)
    expect(errors.map((e) => (e as Error).message)).toEqual(Array(FAN_OUT).fill('left'))
    expect(warnings()).toEqual([])
  })
})
