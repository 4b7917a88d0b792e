import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// `-H 'x-deadline-remaining-ms: …'` never reached the endpoint (fetch dropped
// the caller's deadline header even with no deadline of its own to send),
// though `-H` promises every header on every call, warm-up included. The
// probe sends no deadline of its own, so the given one goes out as typed.
// main() runs in this process, as test/cli's do.

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

it("-H 'x-deadline-remaining-ms: 1500' is sent on every call, warm-up included, beside the other -H headers", async () => {
  server = await faultServer({ type: 'respond', body: 'ok' })
  const run = await runMain([
    'probe',
    server.url,
    '--warmup',
    '1',
    '--samples',
    '1',
    '--json',
    '-H',
    'x-deadline-remaining-ms: 1500',
    '-H',
    'x-other: 1',
  ])
  expect(run.code, run.stderr).toBe(0)
  expect(
    server.records.map((r) => [r.headers['x-deadline-remaining-ms'], r.headers['x-other']]),
  ).toEqual([
    ['1500', '1'],
    ['1500', '1'],
  ])
})
