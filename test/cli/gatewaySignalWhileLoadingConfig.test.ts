import { execFileSync, spawnSync } from 'node:child_process'
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin } from './runNode.js'
import { type SpawnedGroup, spawnGroup } from './spawnGroup.js'

// A stop signal is held from the binary's first line until the gateway
// starts. While the gateway command read its config (a FIFO nobody writes,
// a slow mount), it was only recorded: the process never stopped — where,
// before the hold, the signal killed it. Now the command's own start-up I/O
// is raced against it: stopped at once, nothing started, exit 0 and one
// shutdown line, as a signal while the gateway starts gives.

const hooks = pathToFileURL(new URL('./signalAtImport.mjs', import.meta.url).pathname).href
const preload = (at: string, signal: NodeJS.Signals) =>
  `data:text/javascript,import{register}from'node:module';register(${JSON.stringify(hooks)},{data:${JSON.stringify({ at, signal })}})`

let dir: string
let fifo: string
let writer: Promise<FileHandle> | undefined
let run: SpawnedGroup | undefined
beforeEach(() => {
  assertBuilt()
  dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-'))
  fifo = join(dir, 'gateway.fifo')
})
afterEach(async () => {
  run?.killGroup()
  await run?.closed.catch(() => {})
  run = undefined
  if (writer !== undefined) {
    // A write end still opening waits for a reader: be one, so it (and the
    // thread it holds in this process) lets go.
    closeSync(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK))
    await (await writer).close()
    writer = undefined
  }
  rmSync(dir, { recursive: true, force: true })
})

/** The one stderr line, read as the gateway's JSON log record. */
function shutdownRecord(stderr: string): Record<string, unknown> {
  const lines = stderr.trimEnd().split('\n')
  expect(lines, stderr).toHaveLength(1)
  return JSON.parse(lines[0]!) as Record<string, unknown>
}

describe.skipIf(process.platform === 'win32')(
  'hourglass gateway, a signal while it reads its config',
  () => {
    // The FIFO for these tests only: the --host lookup below reads a plain file.
    beforeEach(() => execFileSync('mkfifo', [fifo]))

    it.for(['SIGTERM', 'SIGINT'] as const)(
      'config a FIFO nobody writes, %s as it loads @hourglass/gateway: exit 0, one shutdown line, nothing read',
      async (signal) => {
        run = spawnGroup(process.execPath, [
          '--import',
          preload('@hourglass/gateway', signal),
          hourglassBin,
          'gateway',
          '--config',
          fifo,
          '--port',
          '0',
        ])
        const done = await run.closed
        expect({ code: done.code, signal: done.signal }, done.stderr).toEqual({
          code: 0,
          signal: null,
        })
        expect(done.stdout).toBe('')
        expect(shutdownRecord(done.stderr)).toMatchObject({
          level: 'info',
          event: 'shutdown',
          signal,
          msg: `shutdown: ${signal} while starting: stopped before listening`,
        })
      },
    )

    it('SIGTERM while the config read is under way (its writer silent): the shutdown line at once, exit 0', async () => {
      run = spawnGroup(process.execPath, [hourglassBin, 'gateway', '--config', fifo, '--port', '0'])
      // Opens once the gateway command opens the FIFO to read it: its read is
      // under way, and waits for data this test never writes.
      writer = open(fifo, 'w')
      const exited = run.closed.then((r) => r)
      const opened = await Promise.race([writer.then(() => true), exited.then(() => false)])
      expect(opened, run.stderr()).toBe(true)
      process.kill(run.child.pid!, 'SIGTERM')
      // The line comes while the read still waits (this test holds the write end).
      const said = await Promise.race([
        new Promise<boolean>((resolve) => {
          const check = () => run!.stderr().includes('\n') && resolve(true)
          run!.child.stderr.on('data', check)
          check()
        }),
        exited.then(() => false),
      ])
      expect(said, `no line before the guard killed it: ${run.stderr()}`).toBe(true)
      // Its read ends (end of file): the process may exit now.
      await (await writer).close()
      writer = undefined
      const done = await exited
      expect({ code: done.code, signal: done.signal }, done.stderr).toEqual({
        code: 0,
        signal: null,
      })
      expect(done.stdout).toBe('')
      expect(shutdownRecord(done.stderr)).toMatchObject({ event: 'shutdown', signal: 'SIGTERM' })
    })
  },
)

/**
 * A getaddrinfo that hangs for names holding `hang` (a resolver that never
 * answers, an NSS module stuck on LDAP), preloaded into the gateway: it
 * says on stderr when the lookup is under way. Built with the machine's C
 * compiler; without one, the test is skipped.
 */
const HANGING_RESOLVER = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <string.h>
#include <unistd.h>
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
  static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
  if (!real) real = (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))dlsym(RTLD_NEXT, "getaddrinfo");
  if (node && strstr(node, "hang")) { write(2, "looking up\\n", 11); sleep(120); }
  return real(node, service, hints, res);
}
`
const haveCc =
  process.platform === 'linux' && spawnSync('cc', ['--version'], { stdio: 'ignore' }).status === 0

describe.skipIf(!haveCc)('hourglass gateway, a signal while --host is looked up', () => {
  it('SIGTERM while the lookup hangs: the shutdown line, then the process ends by the signal at once, not when the lookup gives up', async () => {
    // Node's exit waits for every thread of its pool, the one stuck in
    // getaddrinfo included: the process said it stopped, then lived on
    // until the lookup gave up (here 120 s; the guard killed it at 14 s).
    const source = join(dir, 'hang.c')
    const shim = join(dir, 'hang.so')
    writeFileSync(source, HANGING_RESOLVER)
    execFileSync('cc', ['-shared', '-fPIC', '-o', shim, source, '-ldl'])
    writeFileSync(join(dir, 'gateway.json'), '{}')
    run = spawnGroup(
      process.execPath,
      [hourglassBin, 'gateway', '--config', join(dir, 'gateway.json'), '--host', 'hang.test'],
      { env: { LD_PRELOAD: shim } },
    )
    const exited = run.closed.then((r) => r)
    const lookingUp = await Promise.race([
      new Promise<boolean>((resolve) => {
        const check = () => run!.stderr().includes('looking up') && resolve(true)
        run!.child.stderr.on('data', check)
        check()
      }),
      exited.then(() => false),
    ])
    expect(lookingUp, run.stderr()).toBe(true)
    process.kill(run.child.pid!, 'SIGTERM')
    const done = await exited
    // Killed by the signal it was sent (a shell reports 143), not by the guard.
    expect({ code: done.code, signal: done.signal }, done.stderr).toEqual({
      code: null,
      signal: 'SIGTERM',
    })
    expect(done.stdout).toBe('')
    expect(shutdownRecord(done.stderr.replace('looking up\n', ''))).toMatchObject({
      event: 'shutdown',
      signal: 'SIGTERM',
      msg: 'shutdown: SIGTERM while starting: stopped before listening',
    })
  })
})
