import { type ChildProcessByStdio, spawn } from 'node:child_process'
import type { Readable } from 'node:stream'
import { repoRoot } from './runNode.js'

export interface GroupRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface SpawnedGroup {
  readonly child: ChildProcessByStdio<null, Readable, Readable>
  /** Output so far. */
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves once the child has exited and its pipes are closed. */
  readonly closed: Promise<GroupRun>
  /** SIGKILL to the whole group: the child and whatever it forked (runuser, unshare). */
  killGroup(): void
}

/**
 * Starts `command <args>` from the repository root in a process group of its
 * own, so a guard kills everything it forked — a `runuser` or `unshare`
 * child's own child included, which `child.kill()` would orphan, holding the
 * pipes open (and the test) for good. The guard fires after `guardMs` (14 s), well
 * inside vitest's 20 s test timeout; `closed` then resolves with the
 * SIGKILL. The group is killed again once the child closes: nothing of it
 * outlives the test.
 */
export function spawnGroup(
  command: string,
  args: string[],
  { env = {}, guardMs = 14_000 }: { env?: Record<string, string>; guardMs?: number } = {},
): SpawnedGroup {
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const pgid = child.pid
  const killGroup = () => {
    // Never 0, 1 or a negative number: kill(0) or kill(-1) would reach the
    // test runner itself (or every process it may signal).
    if (pgid === undefined || !Number.isSafeInteger(pgid) || pgid <= 1) return
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // ESRCH: the group is gone already.
    }
  }
  const guard = setTimeout(killGroup, guardMs)
  const closed = new Promise<GroupRun>((resolve, reject) => {
    child.once('error', (error) => {
      clearTimeout(guard)
      reject(error)
    })
    child.once('close', (code, signal) => {
      clearTimeout(guard)
      killGroup()
      resolve({ code, signal, stdout, stderr })
    })
  })
  return { child, stdout: () => stdout, stderr: () => stderr, closed, killGroup }
}
