import { getEventListeners } from 'node:events'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { contextKey, Deadline, runWithContext, runWithDeadline } from '@hourglass/core'
import { faultServer } from '@hourglass/testkit'
import { Agent, request as undiciRequest } from 'undici'
import { expect, it } from 'vitest'
import { createConnector, createFetch } from '../src/index.js'
import { CountingClock } from './helpers.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

// Every check below is an exact count (listeners on each child, on the
// caller's and the parent's signals; timers still pending) or a bound that
// does not grow with the run (sockets): a listener or timer left by one call
// in a thousand shows at this count as at 10,000, the count before, which
// spent ~6 s more of CPU on the same checks.
it('4,000 requests leave no listener, no timer and no extra socket behind', async () => {
  const server = await faultServer({ type: 'respond', body: 'ok' })
  const clock = new CountingClock()
  const fetch = createFetch({ clock, headersTimeoutMs: 5000, bodyTimeoutMs: 5000 })
  const parent = Deadline.after(600_000, { clock }) // a long-lived request, like a worker's
  const caller = new AbortController() // one signal shared by every call
  const total = 4000
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
  // Keep-alive: a handful of sockets served all 4,000 calls (undici may open one more per worker while the last is being released).
  expect(server.totalConnections).toBeLessThanOrEqual(concurrency * 4)
  expect(server.openConnections).toBeLessThanOrEqual(concurrency * 4)

  await fetch.close()
  await server.idle()
  expect(server.openConnections).toBe(0)
  parent.dispose()
  expect(clock.pending).toBe(0)
  await server.close()
}, 120_000)

it('a connection kept alive by createConnector() does not keep the request that opened it (its context, and what that holds)', async () => {
  const server = await faultServer({ type: 'respond', body: 'ok' })
  const dispatcher = new Agent({ connect: createConnector() })
  const slot = contextKey<{ body: Buffer }>('test.request')
  // What a request's context reaches in a service: its body, say.
  let request: { body: Buffer } | undefined = { body: Buffer.alloc(1024 * 1024) }
  const held = new WeakRef(request)
  const deadline = Deadline.after(10_000)
  await runWithContext(slot, request, () =>
    runWithDeadline(deadline, async () => {
      await (await undiciRequest(server.url, { dispatcher })).body.text()
    }),
  )
  deadline.dispose()
  request = undefined
  // The connection is still open (kept alive for the next request)…
  expect(server.openConnections).toBe(1)
  for (let i = 0; i < 5 && held.deref() !== undefined; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
  }
  // …and the request it was opened for is gone (undici's own connector keeps it).
  expect(held.deref()).toBeUndefined()
  // The next request reuses it.
  await (await undiciRequest(server.url, { dispatcher })).body.text()
  expect(server.totalConnections).toBe(1)
  await dispatcher.close()
  await server.close()
})
