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

/**
 * A phase whose own limit was longer than the time left was left to the
 * deadline alone, with no timer of its own. Disposed mid-call (express
 * disposes the request's as its response ends, work going on after the
 * answer), the deadline never expired, and nothing bounded that phase any
 * more: a server that never answered, or fell silent mid-body, held the
 * call, its socket and its attempt for good — where under no deadline, or
 * one longer than the limit, the limit failed it (HEADERS_TIMEOUT /
 * BODY_TIMEOUT after 400 ms here). On a ManualClock: no wait is real.
 */
describe('createFetch under a deadline disposed mid-call', () => {
  it('fails a server that never answers at headersTimeoutMs, as under no deadline', async () => {
    const server: FaultServer = await faultServer({ type: 'hang' })
    closers.push(server)
    const clock = new ManualClock()
    const fetch = createFetch({ clock, headersTimeoutMs: 400 })
    closers.push({ close: () => fetch.dispatcher.destroy() })
    const deadline = Deadline.after(300, { clock }) // shorter than the limit: the deadline bounded the phase
    const call = fetch(server.url, { deadline, retry: false })
    await server.request(0)
    deadline.dispose()
    clock.advance(400)
    await expect(call).rejects.toMatchObject({ code: 'HEADERS_TIMEOUT', limitMs: 400 })
  })

  // A response that finished on a busy loop after the deadline's time passed
  // but before its timer ran: express disposed it then. It reads expired yet
  // never ends (no abort): the call was held for good, its phase untimed again
  // at each look.
  it('fails at headersTimeoutMs under one disposed after its time passed, before its timer ran', async () => {
    const server: FaultServer = await faultServer({ type: 'hang' })
    closers.push(server)
    const clock = new ManualClock()
    const fetch = createFetch({ clock, headersTimeoutMs: 400 })
    closers.push({ close: () => fetch.dispatcher.destroy() })
    // Due with the deadline's own timer and scheduled first: it runs first.
    clock.setTimeout(() => deadline.dispose(), 300)
    const deadline = Deadline.after(300, { clock })
    const call = fetch(server.url, { deadline, retry: false })
    await server.request(0)
    clock.advance(300)
    expect(deadline.done).toBe(false)
    clock.advance(101)
    await expect(call).rejects.toMatchObject({ code: 'HEADERS_TIMEOUT', limitMs: 400 })
  })

  it('fails a body that falls silent at bodyTimeoutMs, as under no deadline', async () => {
    const server: FaultServer = await faultServer({ type: 'headers-then-stall' })
    closers.push(server)
    const clock = new ManualClock()
    const fetch = createFetch({ clock, bodyTimeoutMs: 400 })
    closers.push({ close: () => fetch.dispatcher.destroy() })
    const deadline = Deadline.after(300, { clock })
    const res = await fetch(server.url, { deadline })
    const read = res.text() // reading when the deadline is disposed
    deadline.dispose()
    clock.advance(400)
    await expect(read).rejects.toMatchObject({ code: 'BODY_TIMEOUT', limitMs: 400 })
  })
})
