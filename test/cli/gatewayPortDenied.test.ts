import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, cliBin, hourglassBin } from './runNode.js'
import { type SpawnedGroup, spawnGroup } from './spawnGroup.js'

// A container that runs as a user (not root) with PORT=80 got Node's
// `listen EACCES: permission denied 127.0.0.1:80`: neither where the port
// came from nor what to do. One line names both, as for a port in use —
// and the first unprivileged port as this machine sets it
// (net.ipv4.ip_unprivileged_port_start), not a 1024 it may not be.

/**
 * Whether `nobody` (as root: runuser), here or in a new network namespace
 * whose first unprivileged port is `portStart` (unshare), is refused port
 * `port` (EACCES), and may read the built CLI. Asked of the machine, not
 * assumed: Docker sets ip_unprivileged_port_start=0 in a container, where
 * nobody may listen on 80 — the gateway would start, and the test wait.
 */
function deniedToNobody(port: number, portStart?: number): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false
  const probe = `const fs=require('fs');for(const f of ${JSON.stringify([hourglassBin, cliBin])})fs.accessSync(f,fs.constants.R_OK);const s=require('net').createServer();s.on('error',e=>process.exit(e.code==='EACCES'?0:1));s.listen(${port},'127.0.0.1',()=>process.exit(1))`
  const [command, args] = asNobody([process.execPath, '-e', probe], portStart)
  return spawnSync(command, args, { stdio: 'ignore', timeout: 5_000 }).status === 0
}

/** `argv` run as nobody; in a network namespace of its own where `portStart` is the first unprivileged port, if given. */
function asNobody(argv: string[], portStart?: number): [string, string[]] {
  const runuser = ['runuser', '-u', 'nobody', '--', ...argv]
  if (portStart === undefined) return [runuser[0]!, runuser.slice(1)]
  // The port range is per network namespace: set in a new one, as root, before dropping to nobody.
  return [
    'unshare',
    [
      '--net',
      '--kill-child',
      'sh',
      '-c',
      `echo ${portStart} > /proc/sys/net/ipv4/ip_unprivileged_port_start && exec "$@"`,
      'sh',
      ...runuser,
    ],
  ]
}

/** This machine's first unprivileged port, as the gateway reads it. */
function unprivilegedPortStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').trim())
  } catch {
    return 1024
  }
}

let dir: string
let config: string
let run: SpawnedGroup | undefined
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-'))
  chmodSync(dir, 0o755)
  config = join(dir, 'gateway.json')
  writeFileSync(
    config,
    JSON.stringify({
      providers: { fake: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
      models: { small: { fallback: [{ provider: 'fake', model: 'm' }] } },
    }),
    { mode: 0o644 },
  )
})
afterEach(async () => {
  run?.killGroup()
  await run?.closed.catch(() => {})
  run = undefined
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function gatewayAsNobody(flags: string[], env: Record<string, string>, portStart?: number) {
  assertBuilt()
  const [command, args] = asNobody(
    [process.execPath, hourglassBin, 'gateway', '--config', config, ...flags],
    portStart,
  )
  run = spawnGroup(command, args, { env })
  return run.closed
}

// Asked once, before the cases are listed: whether the namespace case below can run.
const namespaced = deniedToNobody(1500, 2000)

describe.skipIf(!deniedToNobody(80))('hourglass gateway on a privileged port, not as root', () => {
  it.for([
    ['PORT=80', { PORT: '80' }, [], 'set PORT to another port'],
    // The line for --port is the namespace case's below (a gateway process
    // costs a second of CPU): here only where that case cannot run. Which
    // source the advice names is judged in this process for a port in use
    // (packages/cli/test/gatewayPortInUse.test.ts), the same words.
    ...(namespaced ? [] : [['--port 80', {}, ['--port', '80'], 'pick another --port'] as const]),
  ] as const)(
    '%s: one line naming the port and its source, exit 1',
    async ([, env, flags, advice]) => {
      const done = await gatewayAsNobody([...flags], { ...env })
      expect(done.stderr).toBe(
        `hourglass gateway: cannot listen on 127.0.0.1:80: permission denied (a port below ${unprivilegedPortStart()} needs privileges: ${advice}, or 0 for any free port)\n`,
      )
      expect(done.stdout).toBe('')
      expect(done.code).toBe(1)
    },
  )
})

describe.skipIf(!namespaced)(
  'hourglass gateway where the first unprivileged port is not 1024',
  () => {
    it('ip_unprivileged_port_start=2000, --port 1500: the line names 2000 and --port, exit 1', async () => {
      const done = await gatewayAsNobody(['--port', '1500'], {}, 2000)
      expect(done.stderr).toBe(
        'hourglass gateway: cannot listen on 127.0.0.1:1500: permission denied (a port below 2000 needs privileges: pick another --port, or 0 for any free port)\n',
      )
      expect(done.stdout).toBe('')
      expect(done.code).toBe(1)
    })
  },
)
