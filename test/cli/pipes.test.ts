import { spawn } from 'node:child_process'
import { closeSync, existsSync, openSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, repoRoot } from './runNode.js'

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

describe('hourglass probe with its stderr closed (`2>&1 >out.json | head -1`, a log reader gone)', () => {
  it('still prints its result on stdout and exits 0: the progress on stderr is not the output', async () => {
    assertBuilt()
    server = createServer((_req, res) => res.end('ok'))
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const child = spawn(
      process.execPath,
      [hourglassBin, 'probe', url, '--warmup', '0', '--samples', '20', '--json'],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    // The reader of stderr goes away before the CLI writes its first progress dot.
    child.stderr.destroy()
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
    clearTimeout(guard)
    expect(code).toBe(0)
    const report = JSON.parse(stdout)
    expect(report.samples).toHaveLength(20)
  })
})

describe('hourglass probe --json with its stdout on a full disk (`> report.json`, ENOSPC)', () => {
  // /dev/full fails every write with ENOSPC, as a file on a full disk does.
  it.skipIf(!existsSync('/dev/full'))(
    'says in one line that its output is lost and exits 1, not 0 with nothing written',
    async () => {
      assertBuilt()
      server = createServer((_req, res) => res.end('ok'))
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
      const full = openSync('/dev/full', 'w')
      try {
        const child = spawn(
          process.execPath,
          [hourglassBin, 'probe', url, '--warmup', '0', '--samples', '2', '--json'],
          { cwd: repoRoot, stdio: ['ignore', full, 'pipe'] },
        )
        let stderr = ''
        // stdio[2] is 'pipe': there is a stream (the type cannot tell, with fd 1 a number).
        child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
        const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
        const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
        clearTimeout(guard)
        expect(stderr.trimEnd().split('\n').at(-1)).toBe(
          'hourglass: could not write its output to stdout (ENOSPC): the output is incomplete',
        )
        expect(stderr).not.toMatch(/\n\s+at /)
        expect(code).toBe(1)
      } finally {
        closeSync(full)
      }
    },
  )
})

/** What the test's preload prints on stderr once the child has written to its stdout. */
const FIRST_WRITE = 'pipes.test: first write to stdout made'

/** A port free a moment ago. */
async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

describe.each([
  ['gateway', ['--config', '<config>']],
  ['demo --serve', ['--serve']],
])('hourglass %s with its stdout closed (`| head -0`)', (name, extra) => {
  it('keeps serving, prints no EPIPE stack, and exits 0 on SIGTERM', async () => {
    assertBuilt()
    const dir = await mkdtemp(join(tmpdir(), 'hourglass-pipes-'))
    try {
      const config = join(dir, 'gateway.json')
      await writeFile(
        config,
        JSON.stringify({
          providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
          models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        }),
      )
      // The demo answers nobody we know of (its ports go to the closed stdout):
      // this preload says on stderr when its first write to stdout has been
      // made, the banner it prints once both chains listen, just before it
      // waits for a signal. A SIGTERM sent before that (after a fixed 2.3 s,
      // as before: a start took 0.6–1.7 s with the CPU merely busy) finds no
      // handler of its own and ends it by the signal: exit null, not 0.
      const firstWrite = join(dir, 'firstWrite.cjs')
      await writeFile(
        firstWrite,
        `const { writeSync } = require('node:fs')
const write = process.stdout.write
let said = false
process.stdout.write = function (...args) {
  const result = write.apply(this, args)
  if (!said) {
    said = true
    writeSync(2, '${FIRST_WRITE}\\n')
  }
  return result
}
`,
      )
      const port = await freePort()
      const args = name === 'gateway' ? ['gateway', '--port', String(port)] : ['demo']
      const child = spawn(
        process.execPath,
        [
          '--require',
          firstWrite,
          hourglassBin,
          ...args,
          ...extra.map((a) => (a === '<config>' ? config : a)),
        ],
        { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
      )
      child.stdout.destroy()
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
      let alive = true
      void exited.then(() => (alive = false))
      const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
      try {
        // Up once it answers (the gateway) or once it has made its first write
        // (the demo's banner, printed after both chains listen): either way,
        // its SIGTERM handler is in place. Waited for, not timed: a loaded box
        // took more than the 2 s this used to allow (the guard ends it at 20 s).
        while (alive) {
          if (name === 'gateway') {
            const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
              (r) => r.ok,
              () => false,
            )
            if (ok) break
          } else if (stderr.includes(FIRST_WRITE)) {
            break
          }
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        // Still running a moment after its first write to the closed stdout.
        await new Promise((resolve) => setTimeout(resolve, 300))
        expect(alive, stderr).toBe(true)
        child.kill('SIGTERM')
        expect(await exited, stderr).toBe(0)
        expect(stderr).not.toMatch(/EPIPE|\n\s+at /)
      } finally {
        clearTimeout(guard)
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('hourglass gateway with its stdout on a full disk (`> gateway.log`, ENOSPC)', () => {
  // Its `listening` line is a notice, not its result: a clean drain exited 1
  // ("could not write its output") and a supervisor read a failed gateway.
  it.skipIf(!existsSync('/dev/full'))(
    'says the lost line on stderr, and a clean stop still exits 0',
    async () => {
      assertBuilt()
      const dir = await mkdtemp(join(tmpdir(), 'hourglass-pipes-'))
      const full = openSync('/dev/full', 'w')
      try {
        const config = join(dir, 'gateway.json')
        await writeFile(
          config,
          JSON.stringify({
            providers: {
              p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] },
            },
            models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
          }),
        )
        const port = await freePort()
        const child = spawn(
          process.execPath,
          [hourglassBin, 'gateway', '--config', config, '--port', String(port)],
          { cwd: repoRoot, stdio: ['ignore', full, 'pipe'] },
        )
        let stderr = ''
        child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
        const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
        let alive = true
        void exited.then(() => (alive = false))
        const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
        try {
          // Up once it answers: its SIGTERM handler is in place, its line written.
          while (alive) {
            const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
              (r) => r.ok,
              () => false,
            )
            if (ok) break
            await new Promise((resolve) => setTimeout(resolve, 50))
          }
          child.kill('SIGTERM')
          expect(await exited, stderr).toBe(0)
          expect(stderr).toContain(
            'hourglass: could not write its output to stdout (ENOSPC): the output is incomplete',
          )
          expect(stderr).not.toMatch(/\n\s+at /)
        } finally {
          clearTimeout(guard)
        }
      } finally {
        closeSync(full)
        await rm(dir, { recursive: true, force: true })
      }
    },
  )
})
