import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, runCommand } from './runNode.js'

// A container that runs as a user (not root) with PORT=80 got Node's
// `listen EACCES: permission denied 127.0.0.1:80`: neither where the port
// came from nor what to do. One line names both, as for a port in use.

const asNobody =
  process.platform === 'linux' &&
  process.getuid?.() === 0 &&
  spawnSync('runuser', ['-u', 'nobody', '--', 'true']).status === 0

let dir: string
let config: string
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
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe.skipIf(!asNobody)('hourglass gateway on a privileged port, not as root', () => {
  it.for([
    ['PORT=80', { PORT: '80' }, [], 'set PORT to another port'],
    ['--port 80', {}, ['--port', '80'], 'pick another --port'],
  ] as const)(
    '%s: one line naming the port and its source, exit 1',
    async ([, env, flags, advice]) => {
      assertBuilt()
      const run = await runCommand(
        'runuser',
        [
          '-u',
          'nobody',
          '--',
          process.execPath,
          hourglassBin,
          'gateway',
          '--config',
          config,
          ...flags,
        ],
        { env: { ...env }, killAfterMs: 30_000 },
      )
      expect(run.stderr).toBe(
        `hourglass gateway: cannot listen on 127.0.0.1:80: permission denied (a port below 1024 needs privileges: ${advice}, or 0 for any free port)\n`,
      )
      expect(run.stdout).toBe('')
      expect(run.code).toBe(1)
    },
  )
})
