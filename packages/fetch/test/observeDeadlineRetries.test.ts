import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { useHttpServer } from './helpers.js'

/**
 * Dark mode reports what enforcement would do and changes no decision: a
 * status retry under an observe-only deadline whose time has passed is sent
 * as it would be with no deadline at all. Before, the retry was refused as
 * `no-budget` (the deadline's `remaining()` was 0), so turning dark mode on
 * changed what the service did.
 */

const listen = useHttpServer()

it('an observed, passed deadline does not stop a status retry', async () => {
  let requests = 0
  const base = await listen((_req, res) => {
    requests++
    res.statusCode = requests === 1 ? 503 : 200
    res.end(requests === 1 ? 'busy' : 'ok')
  })
  const clock = new ManualClock()
  const observed = Deadline.after(100, { clock, observe: true })
  clock.advance(500)
  expect(observed.expired).toBe(true)
  const fetch = createFetch({ retry: { statuses: [503] } })
  try {
    const res = await fetch(`${base}/`, { deadline: observed })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('ok')
  } finally {
    await fetch.close()
  }
  expect(requests).toBe(2)
})
