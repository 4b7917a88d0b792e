import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
/** The built CLI entry point (what `assertBuilt(cliBin)` checks for). */
export const cliBin = fileURLToPath(new URL('../../packages/cli/dist/bin.js', import.meta.url))
/** What the `hourglass` bin links to: the committed shim that loads dist/bin.js. */
export const hourglassBin = fileURLToPath(
  new URL('../../packages/cli/bin/hourglass.js', import.meta.url),
)

/** Child-process tests run the built code: say so clearly when it is missing. */
export function assertBuilt(file = cliBin): void {
  if (!existsSync(file)) {
    throw new Error(`${file} does not exist: run \`npm run build\` before these tests`)
  }
}

export interface NodeRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
  elapsedMs: number
}

/**
 * Run `node <args>` from the repository root and collect its output. A run
 * still going after `killAfterMs` is killed (its `signal` says so) — a guard
 * against a hang, not a synchronisation.
 */
export function runNode(args: string[], options: RunOptions = {}): Promise<NodeRun> {
  return runCommand(process.execPath, args, options)
}

export interface RunOptions {
  killAfterMs?: number
  env?: Record<string, string>
}

/**
 * Run `command <args>` (found on PATH, as a shell would: `npm`, `npx`, a
 * script with a shebang) from the repository root, like `runNode`.
 */
export function runCommand(
  command: string,
  args: string[],
  options: RunOptions = {},
): Promise<NodeRun> {
  const started = performance.now()
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // npm and npx are .cmd scripts on Windows, which only a shell runs.
    shell: process.platform === 'win32' && command !== process.execPath,
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const guard = setTimeout(() => child.kill('SIGKILL'), options.killAfterMs ?? 30_000)
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code, signal) => {
      clearTimeout(guard)
      resolve({ code, signal, stdout, stderr, elapsedMs: performance.now() - started })
    })
  })
}
