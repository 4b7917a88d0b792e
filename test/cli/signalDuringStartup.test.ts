import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import { assertBuilt, hourglassBin, runNode } from './runNode.js'

// A SIGTERM or SIGINT in the first moments of start-up — while the command
// loads the gateway, the demo chains, their dependencies (0.7 s and more on
// a busy machine) — met no handler and killed the process: no log line, and
// 143 where the same signal a moment later drained and exited 0. A
// supervisor that stops a container just after starting it saw a crash.
// The child signals itself as it starts importing the module named (module
// hooks, signalAtImport.mjs): a point of start-up fixed by an event. The
// process has caught the signal before that import goes on (libuv's handler
// queues it at once), but JavaScript gets it only when the event loop next
// polls: on Node 20 while the module loads, on Node 24 (whose main thread
// waits for the hooks thread without polling) only once its whole import
// is done. The binary has every signal it caught delivered before it hands
// the hold over and before it exits (caughtSignalsDelivered), so both
// versions end the same way. Before, on Node 24, the demo printed its
// banner, the probe ran on and exited 1, and a SIGHUP caught as the probe
// loaded was dropped with the hold it was caught under.

const hooks = pathToFileURL(new URL('./signalAtImport.mjs', import.meta.url).pathname).href
const preload = (at: string, signal: NodeJS.Signals) =>
  `data:text/javascript,import{register}from'node:module';register(${JSON.stringify(hooks)},{data:${JSON.stringify({ at, signal })}})`

function startSignalled(signal: NodeJS.Signals, at: string, args: string[]) {
  assertBuilt()
  return runNode(['--import', preload(at, signal), hourglassBin, ...args], { killAfterMs: 14_000 })
}

describe('a signal while hourglass starts', () => {
  // The gateway, SIGTERM or SIGINT while it loads @hourglass/gateway: in
  // gatewaySignalWhileLoadingConfig.test.ts, whose config is a FIFO nobody
  // writes, so it also shows nothing is read after the signal (exit 0, the
  // one shutdown line). The same run with a plain config ended the same
  // way and proved no more: the signal, sent as the module starts loading,
  // is seen before any config is read.
  it('gateway, SIGTERM while the binary loads @hourglass/core, its first import: held, stopped before listening, exit 0', async () => {
    // The binary's static imports ran before its first line, and one pulled
    // in all of core: the signal came before the hold and killed the process
    // without a word (143) — as PID 1, where the kernel drops a signal with
    // no handler, it was lost and the gateway went on to listen and serve.
    const dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const config = join(dir, 'gateway.json')
    writeFileSync(
      config,
      JSON.stringify({
        providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
        models: { small: { fallback: [{ provider: 'p', model: 'm' }] } },
      }),
    )
    const run = await startSignalled('SIGTERM', '@hourglass/core', [
      'gateway',
      '--config',
      config,
      '--port',
      '0',
    ])
    expect({ code: run.code, signal: run.signal }, run.stderr).toEqual({ code: 0, signal: null })
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain(
      '"msg":"shutdown: SIGTERM while starting: stopped before listening"',
    )
  })

  it('demo --serve, SIGTERM while it loads its chains: stops cleanly, exit 0, no banner', async () => {
    const run = await startSignalled('SIGTERM', '/serveDemo.js', ['demo', '--serve'])
    expect({ code: run.code, signal: run.signal }, run.stderr).toEqual({ code: 0, signal: null })
    expect(run.stdout).toBe('stopping…\n')
  })

  it('probe, SIGTERM while it loads @hourglass/fetch: ends by the signal, as it does later (not held)', async () => {
    const run = await startSignalled('SIGTERM', '@hourglass/fetch', [
      'probe',
      'http://127.0.0.1:9/',
      '--warmup',
      '0',
      '--samples',
      '1',
    ])
    expect({ code: run.code, signal: run.signal }, run.stderr).toEqual({
      code: null,
      signal: 'SIGTERM',
    })
  })

  it('probe, SIGHUP while the binary loads it: held, not dropped when probe lets go of it, and it ends by the signal', async () => {
    // Caught while the startup hold listens; probe has no SIGHUP handler of
    // its own, so letting go of the hold removed the signal's last listener
    // — and, not yet delivered, the signal with it.
    const run = await startSignalled('SIGHUP', '/commands/probe.js', [
      'probe',
      'http://127.0.0.1:9/',
      '--warmup',
      '0',
      '--samples',
      '1',
    ])
    expect({ code: run.code, signal: run.signal }, run.stderr).toEqual({
      code: null,
      signal: 'SIGHUP',
    })
  })
})
