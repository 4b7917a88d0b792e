import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { runMain } from './runMain.js'

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

/** `/from` redirects (302) to `/to`, which answers at once; `/loop` redirects to itself. */
async function redirectingServer(): Promise<string> {
  server = createServer((req, res) => {
    if (req.url === '/from') {
      // The first hop is the slow one: a probe timing only the last hop would miss it all.
      setTimeout(() => res.writeHead(302, { location: '/to' }).end(), 50)
    } else if (req.url === '/loop') {
      res.writeHead(307, { location: '/loop' }).end()
    } else {
      res.end('ok')
    }
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

// main() runs in this process, as the probe's other cases do (a child
// process per case cost half a second of CPU): the bin hands its exit code
// and stderr to the shell unchanged (pipes.test.ts shows it for a probe's
// exit 1).
describe('hourglass probe <url> that redirects', () => {
  it.each([[[]], [['--json']]])(
    'ends with one line naming the redirect, exit 1, rather than report the last hop as the call (%j)',
    async (extra) => {
      const base = await redirectingServer()
      const run = await runMain([
        'probe',
        `${base}/from`,
        '--warmup',
        '0',
        '--samples',
        '2',
        ...extra,
      ])
      expect(run.code, run.stderr).toBe(1)
      expect(run.stdout).toBe('')
      const lines = run.stderr.trimEnd().split('\n')
      // The progress line, then the error on a line of its own.
      expect(lines).toHaveLength(2)
      expect(lines[0]).toMatch(/^probing /)
      expect(lines[1]).toMatch(/^hourglass probe: .*\/from answered 302, a redirect/)
      expect(run.stderr).not.toMatch(/\n\s+at /)
    },
  )

  it('a redirect loop: the same one line, on a line of its own, exit 1', async () => {
    const base = await redirectingServer()
    const run = await runMain(['probe', `${base}/loop`, '--warmup', '0', '--samples', '2'])
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toBe('')
    const lines = run.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(2)
    // One dot per call, not one per redirect hop.
    expect(lines[0]).toMatch(/^probing \S+ \(0 warm-up, 2 measured\) \.?$/)
    expect(lines[1]).toMatch(/^hourglass probe: .*\/loop answered 307, a redirect/)
  })
})
