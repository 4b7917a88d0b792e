import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, createFetch, type LookupFunction } from '../src/index.js'
import { blackhole } from './support/blackhole.js'

// Node's own Happy Eyeballs (no `localAddress`): each address but the last
// is given `autoSelectFamilyAttemptTimeout` and then aborted. Left at Node's
// 250 ms, a connect budget under that spent itself on a first address that
// never answers, and the second was never tried. The connector now hands
// Node at most half the budget. Real timers (Node's own, inside
// net.connect): the outcome depends on time passing, not on any ms figure
// asserted. 127.0.0.2 never answers (support/blackhole.ts); 127.0.0.1 does.

let closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.map((close) => close()))
  closers = []
})

async function deadFirst(): Promise<number> {
  const server = createServer((_req, res) => res.end('ok'))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push(async () => {
    server.closeAllConnections()
    server.close()
  })
  const port = (server.address() as AddressInfo).port
  const dead = await blackhole('127.0.0.2', port)
  closers.push(() => dead.close())
  return port
}

const lookup: LookupFunction = (_name, _options, callback) =>
  callback(null, [
    { address: '127.0.0.2', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ])

it('a connectTimeoutMs under 250 ms still reaches the second address', async () => {
  const port = await deadFirst()
  const agent = new Agent({ connect: createConnector({ lookup, connectTimeoutMs: 200 }) })
  closers.push(() => agent.destroy())
  // Before: CONNECT_TIMEOUT after 200 ms, 127.0.0.1 never tried.
  const res = await request(`http://svc.test:${port}/`, { dispatcher: agent })
  expect(await res.body.text()).toBe('ok')
})

it('the deadline is the budget too: a call with under 250 ms left reaches the second address', async () => {
  const port = await deadFirst()
  const fetch = createFetch({ lookup, connectTimeoutMs: 0 })
  closers.push(() => fetch.close())
  using deadline = Deadline.after(220)
  // Before: DEADLINE_EXCEEDED, the whole budget spent on 127.0.0.2.
  const res = await fetch(`http://svc.test:${port}/`, { deadline })
  expect(await res.text()).toBe('ok')
})
