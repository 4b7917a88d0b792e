import { once } from 'node:events'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { probe } from '../src/probe.js'

/**
 * probe() names the phase a call was cut in on the error of its own bound
 * (`callTimeoutMs`). A caller's deadline that ended the call a moment
 * before the bound ran out is the caller's error, shared with whatever else
 * waits on that deadline: it was given a `phase` too when the bound had
 * expired by the time the rejection was caught (a race of a few
 * microtasks, walked here gap by gap).
 */
const sockets = new Set<Socket>()
const server = createServer((s) => {
  sockets.add(s)
  s.on('error', () => {})
})
afterEach(() => {
  for (const s of sockets) s.destroy()
  sockets.clear()
})

it("puts `phase` on the bound's own error only, never on a caller's deadline's", async () => {
  if (!server.listening) {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
  }
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const seen = { caller: 0, bound: 0 }
  for (let gap = 0; gap <= 6; gap++) {
    const clock = new ManualClock()
    const caller = Deadline.after(150, { clock })
    const connected = once(server, 'connection')
    const run = runWithDeadline(caller, () =>
      probe(url, { warmup: 0, samples: 1, callTimeoutMs: 200, clock }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    )
    await connected
    // The request is written and waits for headers that never come.
    await new Promise((resolve) => setImmediate(resolve))
    clock.advance(150)
    for (let k = 0; k < gap; k++) await Promise.resolve()
    clock.advance(50)
    const error = (await run) as { phase?: unknown }
    if (error === caller.reason) {
      seen.caller++
      expect(error.phase, `gap ${gap}: the caller's error`).toBeUndefined()
    } else {
      seen.bound++
      expect(error.phase, `gap ${gap}: the bound's error`).toBe('headers')
    }
    caller.dispose()
  }
  // Both sides of the race were walked.
  expect(seen.caller).toBeGreaterThan(0)
  server.close()
})
