import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// `hourglass probe --budget <ms>` did not bound the probe's own calls: an
// endpoint that never answers held it for fetch's 10 s headers limit,
// whatever the budget. A call is now abandoned at 3 × the budget (calls
// slower than the budget are still measured: they are what the "would have
// cut" warning reports). main() runs in this process, as test/cli's do; the
// only wait is the 600 ms bound of a 200 ms budget. (A 20 ms budget's 60 ms
// bound could pass, on a loaded box, before the call had even reached the
// server: then no request was there to close, and the wait for it never
// ended. Unbounded, the probe would wait fetch's 10 s headers limit and say
// so: "sent no response headers within 10000 ms".)

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

it('a server that never answers ends the probe at 3 × --budget, naming the bound, and the call is closed', async () => {
  server = await faultServer({ type: 'hang' })
  const run = await runMain([
    'probe',
    server.url,
    '--warmup',
    '1',
    '--samples',
    '3',
    '--budget',
    '200',
  ])
  expect(run.code, run.stderr).toBe(1)
  expect(run.stdout).toBe('')
  expect(run.stderr).toMatch(
    /^hourglass probe: 127\.0\.0\.1:\d+ did not finish warm-up call 1 of 1 within 600 ms \(3 × the 200 ms --budget\): connected, it had sent no response headers; the probe stops waiting there$/m,
  )
  // The probe closed the call it gave up on, and made no other.
  await server.clientGone(0)
  expect(server.records).toHaveLength(1)
})

// "did not finish a call" did not say which: the first, cold one — a cold
// start, what the warm-up is for (above: "warm-up call 1 of 1") — or one
// after others had answered in time.
it('the message names the measured call the bound cut, after the calls that answered', async () => {
  // Two warm-up calls and one measured call answer; the second measured call hangs.
  server = await faultServer((_req, i) => (i === 3 ? { type: 'hang' } : { type: 'respond' }))
  const run = await runMain([
    'probe',
    server.url,
    '--warmup',
    '2',
    '--samples',
    '4',
    '--budget',
    '200',
  ])
  expect(run.code, run.stderr).toBe(1)
  expect(run.stderr).toMatch(
    /^hourglass probe: 127\.0\.0\.1:\d+ did not finish measured call 2 of 4 within 600 ms /m,
  )
  await server.clientGone(3)
})
