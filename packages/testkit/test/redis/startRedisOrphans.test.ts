import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startRedis } from '../../src/redis/index.js'

// A redis-server outlives the process that started it. A SIGTERM while
// startRedis() was still waiting for the server (before a caller can have a
// handler: it has nothing to stop yet) ended the process by the signal's
// default action and left the server running, orphaned, holding its port;
// so did a process.exit() with a server never stopped. A stand-in binary
// (it writes its pid, and says ready only when told) makes both
// deterministic without redis-server. The child scripts run the built
// package (`npm run build`).

// The redis entry alone: the package's index loads the fake providers and the fault servers too.
const distEntry = fileURLToPath(new URL('../../dist/redis/index.js', import.meta.url))
let dir: string
let pids: number[] = []
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hourglass-redis-orphans-'))
})
afterEach(() => {
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL')
  pids = []
  rmSync(dir, { recursive: true, force: true })
})

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  // Killed but not reaped yet (a zombie, reparented to whatever reaps here): gone all the same.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return process.platform !== 'linux'
  }
}

/** A stand-in for redis-server: writes its pid to `pidFile`, prints the ready line when `ready`. */
function fakeBinary(ready: boolean): { binary: string; pidFile: string } {
  const binary = join(dir, 'fake-redis-server')
  const pidFile = join(dir, 'fake.pid')
  writeFileSync(
    binary,
    `#!${process.execPath}
require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid))
${ready ? "console.log('* Ready to accept connections tcp')" : ''}
setInterval(() => {}, 1000)
`,
  )
  chmodSync(binary, 0o755)
  return { binary, pidFile }
}

/** Resolves the fake server's pid once it has written it (a grandchild: no event of ours says when). */
async function fakePid(child: ChildProcess, pidFile: string): Promise<number> {
  const deadlineAt = performance.now() + 10_000
  while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '') {
    if (performance.now() > deadlineAt) throw new Error('the fake redis-server never started')
    if (child.exitCode !== null) throw new Error(`parent exited ${child.exitCode}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const pid = Number(readFileSync(pidFile, 'utf8'))
  pids.push(pid)
  return pid
}

/** Waits (bounded) for `pid` to be gone: killed by its parent's exit, not by us. */
async function gone(pid: number, withinMs = 3000): Promise<boolean> {
  const deadlineAt = performance.now() + withinMs
  while (alive(pid)) {
    if (performance.now() > deadlineAt) return false
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return true
}

/** Resolves once the script says `startRedis()` has resolved. */
async function started(child: ChildProcess): Promise<void> {
  let out = ''
  for await (const chunk of child.stdout!) {
    out += String(chunk)
    if (out.includes('started')) return
  }
  throw new Error(`the script ended before startRedis() resolved: ${out}`)
}

function runScript(script: string): ChildProcess {
  return spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

describe('startRedis leaves no orphan', () => {
  it('a SIGTERM while the server is starting kills it, and still ends the process by the signal', async () => {
    const { binary, pidFile } = fakeBinary(false)
    const child = runScript(
      `import { startRedis } from ${JSON.stringify(distEntry)}
       await startRedis({ binary: ${JSON.stringify(binary)}, readyTimeoutMs: 60000 })`,
    )
    const exited = once(child, 'exit')
    const pid = await fakePid(child, pidFile)
    child.kill('SIGTERM')
    const [code, signal] = await exited
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' })
    expect(await gone(pid), 'the starting redis-server outlived its parent').toBe(true)
  })

  // How Vitest's forks pool ends a worker (ForksPoolWorker.stop: SIGTERM,
  // SIGKILL 500 ms later), and an OOM kill: no 'exit' listener runs. A test
  // file that never called stop() left its redis-server running after the
  // run, holding its port. SIGKILL, which no listener can see, stands for both.
  it('a process killed by a signal after the server is ready leaves no server behind', async () => {
    const { binary, pidFile } = fakeBinary(true)
    const child = runScript(
      `import { startRedis } from ${JSON.stringify(distEntry)}
       await startRedis({ binary: ${JSON.stringify(binary)} })
       console.log('started')
       setInterval(() => {}, 1000)`,
    )
    const exited = once(child, 'exit')
    const pid = await fakePid(child, pidFile)
    await started(child)
    child.kill('SIGKILL')
    const [, signal] = await exited
    expect(signal).toBe('SIGKILL')
    expect(await gone(pid), 'the redis-server outlived its parent').toBe(true)
  })

  it('a process.exit() with a server never stopped kills it', async () => {
    const { binary, pidFile } = fakeBinary(true)
    const child = runScript(
      `import { startRedis } from ${JSON.stringify(distEntry)}
       await startRedis({ binary: ${JSON.stringify(binary)} })
       process.exit(0)`,
    )
    const exited = once(child, 'exit')
    const pid = await fakePid(child, pidFile)
    const [code] = await exited
    expect(code).toBe(0)
    expect(await gone(pid), 'the redis-server outlived its parent').toBe(true)
  })

  it('a server started and stopped leaves no process listener behind', async () => {
    const { binary } = fakeBinary(true)
    const before = ['exit', 'SIGINT', 'SIGTERM'].map((e) => process.listenerCount(e))
    for (let i = 0; i < 3; i++) {
      const server = await startRedis({ binary })
      await server.stop()
    }
    const killed = await startRedis({ binary })
    // No signal listener while a server runs either: a handler that acts only
    // when it is alone (the gateway's drain, signal-exit) must stay alone.
    expect(['SIGINT', 'SIGTERM'].map((e) => process.listenerCount(e))).toEqual(before.slice(1))
    await killed.kill()
    expect(['exit', 'SIGINT', 'SIGTERM'].map((e) => process.listenerCount(e))).toEqual(before)
  })
})
