import { getEventListeners } from 'node:events'
import { Deadline } from '@hourglass/core'
import { faultServer } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { CountingClock } from './helpers.js'

it('10,000 requests leave no listener, no timer and no extra socket behind', async () => {
  const server = await faultServer({ type: 'respond', body: 'ok' })
  const clock = new CountingClock()
  const fetch = createFetch({ clock, headersTimeoutMs: 5000, bodyTimeoutMs: 5000 })
  const parent = Deadline.after(600_000, { clock }) // a long-lived request, like a worker's
  const caller = new AbortController() // one signal shared by every call
  const total = 10_000
  const concurrency = 4
  let next = 0
  let leakedOnChildren = 0
  let armed = 0
  const setTimeout = clock.setTimeout.bind(clock)
  clock.setTimeout = (cb, ms) => {
    armed++
    return setTimeout(cb, ms)
  }

  const worker = async () => {
    while (next < total) {
      next++
      const deadline = parent.child(10_000) // longer than the phase limits: their timers are armed
      const res = await fetch(server.url, { deadline, signal: caller.signal })
      await res.text()
      leakedOnChildren += getEventListeners(deadline.signal, 'abort').length
      deadline.dispose()
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))

  expect(server.records).toHaveLength(total)
  expect(armed).toBeGreaterThanOrEqual(total * 2) // headers + body timers, at least, per call
  expect(leakedOnChildren).toBe(0)
  expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0)
  expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0)
  expect(clock.pending).toBe(1) // the parent deadline's own timer, nothing else
  // Keep-alive: a handful of sockets served all 10,000 calls (undici may open one more per worker while the last is being released).
  expect(server.totalConnections).toBeLessThanOrEqual(concurrency * 4)
  expect(server.openConnections).toBeLessThanOrEqual(concurrency * 4)

  await fetch.close()
  await server.idle()
  expect(server.openConnections).toBe(0)
  parent.dispose()
  expect(clock.pending).toBe(0)
  await server.close()
}, 120_000)
