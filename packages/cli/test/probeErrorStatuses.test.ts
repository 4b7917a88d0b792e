import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// An endpoint that answered 503 (or 404, 401) to every call was reported as
// measured, with settings to paste, and exit 0: a script that runs the probe
// before sizing a slice went on with timeouts sized from the error path (a
// 503 is fast), and a wrong URL or a missing auth header read as a success.
// Every call an error: nothing of the endpoint's own work was timed, so
// nothing is suggested, and the exit code says it failed. main() runs in
// this process, as test/cli's do.

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

it.each([[[]], [['--json']]])(
  'every measured call answering an error status is one line on stderr, no settings, exit 1 (%j)',
  async (extra) => {
    server = await faultServer({ type: 'respond', status: 503, body: 'down' })
    const run = await runMain(['probe', server.url, '--warmup', '0', '--samples', '2', ...extra])
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toBe('')
    const lines = run.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[1]).toBe(
      `hourglass probe: ${new URL(server.url).href} answered 503 to every one of the 2 calls measured: the figures would time the error, not the endpoint's work (check the URL, -H headers such as authorization, or the service; --allow-errors to measure it as it is)`,
    )
  },
)

it('a probe where some calls answer 200 still reports, noting the error statuses (exit 0)', async () => {
  let call = 0
  server = await faultServer(() =>
    call++ === 0 ? { type: 'respond', status: 500 } : { type: 'respond', body: 'ok' },
  )
  const run = await runMain(['probe', server.url, '--warmup', '0', '--samples', '2'])
  expect(run.code, run.stderr).toBe(0)
  expect(run.stdout).toContain('note: statuses seen: 500, 200')
})

it('--allow-errors measures an endpoint that answers an error status by design (exit 0, --json on stdout)', async () => {
  server = await faultServer({ type: 'respond', status: 401, body: 'who are you' })
  const run = await runMain([
    'probe',
    server.url,
    '--warmup',
    '0',
    '--samples',
    '2',
    '--json',
    '--allow-errors',
  ])
  expect(run.code, run.stderr).toBe(0)
  expect(JSON.parse(run.stdout).samples).toHaveLength(2)
})
