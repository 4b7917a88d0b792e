import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin } from './runNode.js'
import { type SpawnedGroup, spawnGroup } from './spawnGroup.js'

// In a container started without --init, `hourglass` is PID 1, and the
// kernel ignores a signal PID 1 has no handler for. probe and a demo run had
// none (a signal ended them by its default action): `docker stop` waited its
// 10 s and killed, Ctrl-C in `docker run -it` did nothing, and the probe ran
// to its last sample and exited 0. A new PID namespace (unshare, as root)
// makes the CLI PID 1 here, as in a container; --kill-child and a process
// group of its own leave nothing behind.

const UNSHARE = ['--pid', '--fork', '--kill-child', '--mount-proc']
// The CLI's pid is read from its parent's `children` file: a kernel built
// without it (gVisor, CONFIG_PROC_CHILDREN off) cannot run these tests.
const canReadChildren = (() => {
  try {
    readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8')
    return true
  } catch {
    return false
  }
})()
const canUnshare =
  process.platform === 'linux' &&
  canReadChildren &&
  spawnSync('unshare', [...UNSHARE, 'true'], { stdio: 'ignore', timeout: 5_000 }).status === 0

let server: Server | undefined
let run: SpawnedGroup | undefined
afterEach(async () => {
  run?.killGroup()
  await run?.closed.catch(() => {})
  run = undefined
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

/**
 * The CLI's pid as this test sees it: unshare's one child (PID 1 inside).
 * An error, not a pid, when that cannot be read: `Number('')` is 0, and
 * `process.kill(0, …)` would signal this test runner's whole group.
 */
function cliPid(unsharePid: number): number | Error {
  let children: string
  try {
    children = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8')
  } catch (error) {
    return new Error(`cannot read unshare's children: ${(error as Error).message}`)
  }
  const [first] = children.trim().split(/\s+/)
  const pid = Number(first)
  return Number.isSafeInteger(pid) && pid > 1
    ? pid
    : new Error(`no child pid in /proc/${unsharePid}/task/${unsharePid}/children: '${children}'`)
}

describe.skipIf(!canUnshare)('hourglass as PID 1 (a container without --init)', () => {
  it.for(['SIGTERM', 'SIGINT'] as const)(
    'probe, %s while it samples: ends at once with 128 + the signal, as a shell reports it',
    async (signal) => {
      assertBuilt()
      server = createServer((_req, res) => setTimeout(() => res.end('ok'), 100))
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
      // Its own process group, killed after the test: unshare and the CLI under it.
      const started = spawnGroup('unshare', [
        ...UNSHARE,
        process.execPath,
        hourglassBin,
        'probe',
        url,
      ])
      run = started
      let failure: Error | undefined
      // The first progress dot: it is sampling. Then the signal, to the CLI
      // (PID 1 inside), not to unshare.
      const onData = () => {
        if (!started.stderr().includes('.')) return
        started.child.stderr.off('data', onData)
        const pid =
          started.child.pid === undefined ? new Error('no pid') : cliPid(started.child.pid)
        if (pid instanceof Error) {
          failure = pid
          started.killGroup()
          return
        }
        try {
          process.kill(pid, signal)
        } catch (error) {
          failure = error as Error
          started.killGroup()
        }
      }
      started.child.stderr.on('data', onData)
      const done = await started.closed
      expect(failure).toBeUndefined()
      expect(done.code, done.stderr).toBe(128 + (signal === 'SIGINT' ? 2 : 15))
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

describe.skipIf(process.platform !== 'linux')(
  'cliPid: never a pid that signals this runner',
  () => {
    it('a process with no children, or none at all: an error, not 0', async () => {
      const started = spawnGroup(process.execPath, ['-e', 'setInterval(() => {}, 1000)'])
      run = started
      await new Promise((resolve) => started.child.once('spawn', resolve))
      expect(cliPid(started.child.pid!)).toBeInstanceOf(Error)
      started.killGroup()
      await started.closed
      // The pid is gone now: its children file with it.
      expect(cliPid(started.child.pid!)).toBeInstanceOf(Error)
    })
  },
)
