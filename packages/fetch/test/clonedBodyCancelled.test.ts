import { Deadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import type { EgressEvents } from './helpers.js'
import { useCleanup } from './support/useCleanup.js'

// A Response `clone()`d is read through a tee of its body: once both copies
// are cancelled, the tee cancels the body beneath with both reasons as one
// array, `[the original's, the clone's]`, and that array reached the attempt
// as its reason. Its `attempt-end` said `errorCode: 'UNKNOWN'` where a plain
// cancel of the same body says `AbortError` (or its reason's class). It now
// says what a plain cancel says: the original's reason, else the clone's,
// else `AbortError`.

const cleanup = useCleanup()
let events: EgressEvents | undefined

async function upstream(): Promise<FaultServer> {
  const server = await faultServer({ type: 'headers-then-stall' })
  cleanup.keep(server)
  return server
}
function client() {
  const fetch = createFetch({ bodyTimeoutMs: 0 })
  cleanup.keep(fetch)
  return fetch
}
const ends = () =>
  events?.ends.map(({ statusCode, errorCode, stoppedBy }) => ({ statusCode, errorCode, stoppedBy }))

it('both copies cancelled with no reason: AbortError, as a plain cancel says', async () => {
  const server = await upstream()
  using deadline = Deadline.after(30_000)
  events = cleanup.record()
  const res = await client()(server.url, { deadline })
  const copy = res.clone()
  await Promise.all([res.body?.cancel(), copy.body?.cancel()])
  await server.clientGone(0)

  expect(events.skipped).toEqual([])
  expect(ends()).toEqual([{ statusCode: 200, errorCode: 'AbortError', stoppedBy: 'caller' }])
})

it("both copies cancelled with reasons of the caller's own: the original's, as a plain cancel with it says", async () => {
  const server = await upstream()
  using deadline = Deadline.after(30_000)
  events = cleanup.record()
  const res = await client()(server.url, { deadline })
  const copy = res.clone()
  await Promise.all([res.body?.cancel(new RangeError('enough')), copy.body?.cancel()])
  await server.clientGone(0)
  const again = await client()(server.url, { deadline })
  const second = again.clone()
  await Promise.all([again.body?.cancel(), second.body?.cancel(new TypeError('done'))])
  await server.clientGone(1)

  expect(events.skipped).toEqual([])
  expect(ends()).toEqual([
    { statusCode: 200, errorCode: 'RangeError', stoppedBy: 'caller' },
    { statusCode: 200, errorCode: 'TypeError', stoppedBy: 'caller' },
  ])
})
