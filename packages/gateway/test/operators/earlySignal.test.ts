import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

// The built gateway and CLI (npm test builds first), as a user runs them: a
// child that transpiled the TypeScript sources on load took 15 s to start on
// a loaded 2-core machine, more than the signal windows under test.
const repoRoot = fileURLToPath(new URL('../../../..', import.meta.url))
const cliBin = fileURLToPath(new URL('../../../cli/bin/hourglass.js', import.meta.url))
const gatewayDist = fileURLToPath(new URL('../../dist/index.js', import.meta.url))
const nodeArgs: string[] = []
function assertBuilt(): void {
  if (!existsSync(gatewayDist))
    throw new Error(`${gatewayDist} does not exist: run \`npm run build\` first`)
}

/**
 * A signal that arrives while the gateway starts — most of that time the wait
 * for Redis, up to 2 s — is an operator's or a supervisor's stop like any
 * other: it used to kill the process (143, no drain, no log line) because the
 * CLI's handlers are only installed once `startGateway` resolves.
 */
describe('a signal while the gateway is starting', () => {
  let dir: string
  let redis: Server
  let redisDialled: Promise<void>
  const sockets = new Set<Socket>()
  let child: ChildProcess | undefined

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hourglass-early-signal-'))
    // A Redis that accepts and never answers: the gateway waits in its start
    // for a "ready" that does not come — the window under test.
    let dialled = () => {}
    redisDialled = new Promise<void>((resolve) => {
      dialled = resolve
    })
    redis = createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => {})
      dialled()
    })
    redis.listen(0, '127.0.0.1')
    await once(redis, 'listening')
  })
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    child = undefined
    for (const socket of sockets) socket.destroy()
    sockets.clear()
    await new Promise((resolve) => redis.close(resolve))
    await rm(dir, { recursive: true, force: true })
  })

  async function writeConfig(): Promise<string> {
    const file = join(dir, 'gateway.json')
    await writeFile(
      file,
      JSON.stringify({
        providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
        redis: { url: `redis://127.0.0.1:${(redis.address() as AddressInfo).port}` },
      }),
    )
    return file
  }

  /** Runs `node <args>`, signals it as soon as it dials Redis, resolves how it ended and what it wrote. */
  async function signalWhileStarting(args: string[], signal: NodeJS.Signals) {
    assertBuilt()
    const started = spawn(process.execPath, [...nodeArgs, ...args], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child = started
    let stdout = ''
    let stderr = ''
    started.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    started.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const exited = once(started, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    await Promise.race([
      redisDialled,
      exited.then(([code]) => {
        throw new Error(`exited ${code} before dialling Redis: ${stderr}`)
      }),
    ])
    // Still starting: nothing listens until Redis answers (never) or 2 s pass.
    expect(stdout).toBe('')
    started.kill(signal)
    const [code, killedBy] = await exited
    return { code, killedBy, stdout, stderr }
  }

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'hourglass gateway: %s drains, logs the shutdown line and exits 0, without a listening line',
    async (signal) => {
      const file = await writeConfig()
      const run = await signalWhileStarting(
        [cliBin, 'gateway', '--config', file, '--port', '0'],
        signal,
      )
      expect({ code: run.code, killedBy: run.killedBy }).toEqual({ code: 0, killedBy: null })
      expect(run.stderr).toMatch(/"event":"shutdown".*"msg":"shutdown: drained 0 in \d+ ms"/)
      // Told to stop before it was ready: it never says it is listening.
      expect(run.stdout).toBe('')
    },
    30_000,
  )

  it('startGateway with no handler of its own: the signal is postponed, never swallowed (drained, then the process ends by it), and named to the caller, who does not announce a listener', async () => {
    const file = await writeConfig()
    // What a caller that prints a "listening" line writes: only for a gateway
    // not told to stop while it started.
    const script = [
      "import { loadGatewayConfig, startGateway } from '@hourglass/gateway'",
      `const running = await startGateway({ config: await loadGatewayConfig(${JSON.stringify(file)}), port: 0 })`,
      'process.stdout.write(running.signalledWhileStarting === undefined',
      "  ? 'listening on ' + running.url + '\\n'",
      "  : 'stopping: ' + running.signalledWhileStarting + '\\n')",
    ].join('\n')
    const run = await signalWhileStarting(['--input-type=module', '--eval', script], 'SIGTERM')
    expect({ code: run.code, killedBy: run.killedBy }).toEqual({ code: null, killedBy: 'SIGTERM' })
    // It did start (startGateway resolved), knew it was told to stop, drained
    // (drainOnSignals, the default), then met the signal's default action.
    expect(run.stdout).toBe('stopping: SIGTERM\n')
    expect(run.stderr).toMatch(/"msg":"shutdown: drained 0 in \d+ ms"/)
  }, 30_000)
})
