import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'

/**
 * Dark mode reports what enforcement would do and changes no decision: a
 * status retry under an observe-only deadline whose time has passed is sent
 * as it would be with no deadline at all. Before, the retry was refused as
 * `no-budget` (the deadline's `remaining()` was 0), so turning dark mode on
 * changed what the service did.
 */

let server: Server | undefined
afterEach(async () => {
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

it('an observed, passed deadline does not stop a status retry', async () => {
  let requests = 0
  server = createServer((_req, res) => {
    requests++
    res.statusCode = requests === 1 ? 503 : 200
    res.end(requests === 1 ? 'busy' : 'ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const clock = new ManualClock()
  const observed = Deadline.after(100, { clock, observe: true })
  clock.advance(500)
  expect(observed.expired).toBe(true)
  const fetch = createFetch({ retry: { statuses: [503] } })
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`, { deadline: observed })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('ok')
  } finally {
    await fetch.close()
  }
  expect(requests).toBe(2)
})
