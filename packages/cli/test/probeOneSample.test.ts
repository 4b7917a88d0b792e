import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// `--samples 1` is allowed, and its report read "1 samples of …" and its
// failure "answered 503 to every one of the 1 calls measured". main() runs
// in this process, as test/cli's do.

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

it('a report of one sample says "1 sample of"', async () => {
  server = await faultServer({ type: 'respond', body: 'ok' })
  const run = await runMain(['probe', server.url, '--warmup', '0', '--samples', '1'])
  expect(run.code, run.stderr).toBe(0)
  expect(run.stdout.split('\n')[0]).toBe(`1 sample of ${new URL(server.url).href}`)
})

it('one call measured that answered an error is "the one call measured"', async () => {
  server = await faultServer({ type: 'respond', status: 503, body: 'down' })
  const run = await runMain(['probe', server.url, '--warmup', '0', '--samples', '1'])
  expect(run.code, run.stderr).toBe(1)
  expect(run.stderr.trimEnd().split('\n')[1]).toMatch(
    /^hourglass probe: \S+ answered 503 to the one call measured: the figures would time the error/,
  )
})
