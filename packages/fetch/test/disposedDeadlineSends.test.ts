import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

/**
 * A handler disposes its deadline to opt out of it (work it goes on with
 * after answering): the deadline never expires after that, and reads as
 * one that never does. fetch still read its old expiry: past it, the call
 * was refused ("209 ms elapsed of a 100 ms budget"); before it, it sent the
 * old remainder, which the next hop enforced.
 */
describe('createFetch under a deadline disposed while live', () => {
  it('sends past the old expiry, with no deadline header', async () => {
    const server: FaultServer = await faultServer({ type: 'respond', body: 'ok' })
    closers.push(server)
    const fetch = createFetch()
    closers.push(fetch)
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    deadline.dispose()
    clock.advance(200)
    const res = await runWithDeadline(deadline, () => fetch(server.url))
    expect(await res.text()).toBe('ok')
    expect(server.records[0]?.headers['x-deadline-remaining-ms']).toBeUndefined()
  })
})
