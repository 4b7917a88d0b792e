import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, repoRoot } from './runNode.js'

// In a container started without --init, `hourglass` is PID 1, and the
// kernel ignores a signal PID 1 has no handler for. probe and a demo run had
// none (a signal ended them by its default action): `docker stop` waited its
// 10 s and killed, Ctrl-C in `docker run -it` did nothing, and the probe ran
// to its last sample and exited 0. A new PID namespace (unshare, as root)
// makes the CLI PID 1 here, as in a container.

const canUnshare =
  process.platform === 'linux' &&
  spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

describe.skipIf(!canUnshare)('hourglass as PID 1 (a container without --init)', () => {
  it.for(['SIGTERM', 'SIGINT'] as const)(
    'probe, %s while it samples: ends at once with 128 + the signal, as a shell reports it',
    async (signal) => {
      assertBuilt()
      server = createServer((_req, res) => setTimeout(() => res.end('ok'), 100))
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
      const child = spawn(
        'unshare',
        ['--pid', '--fork', '--mount-proc', process.execPath, hourglassBin, 'probe', url],
        { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
      )
      child.stdout.resume()
      let stderr = ''
      const guard = setTimeout(() => child.kill('SIGKILL'), 60_000)
      // The first progress dot: it is sampling. Then the signal, to the CLI
      // (PID 1 inside), not to unshare.
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        const first = !stderr.includes('.')
        stderr += chunk
        if (first && stderr.includes('.')) {
          const [cli] = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8')
            .trim()
            .split(/\s+/)
          process.kill(Number(cli), signal)
        }
      })
      try {
        const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
        expect(code, stderr).toBe(128 + (signal === 'SIGINT' ? 2 : 15))
      } finally {
        clearTimeout(guard)
      }
    },
  )
})

it('main() as a library leaves the process signal handlers as they were', async () => {
  const { runMain } = await import('./runMain.js')
  const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]
  // A bad port: probe ends before it sends anything; a bad seed, before the demo starts.
  await runMain(['probe', 'http://127.0.0.1:9/', '--warmup', '0', '--samples', '1'])
  await runMain(['demo', '--seed', 'x'])
  expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before)
})
