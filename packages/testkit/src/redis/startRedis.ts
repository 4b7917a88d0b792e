import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { MAX_TIMER_MS, optionError, refuseUnknownOptions } from '@hourglass/core'

export interface StartRedisOptions {
  /** The server binary. Default `redis-server` (found on PATH). */
  binary?: string | undefined
  /**
   * Time allowed for the server to say it is ready, in ms: above 0,
   * `Infinity` = until it says so or exits. Default 10 000.
   */
  readyTimeoutMs?: number | undefined
}

/** A throwaway `redis-server` on 127.0.0.1, no persistence. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  /** Shut the server down and wait for the process to exit. Idempotent: asked while another stop() or kill() waits, it waits for the same exit. */
  stop(): Promise<void>
  /** SIGKILL the server (Redis going down without warning); resolves once the process is gone. */
  kill(): Promise<void>
  /** Start the server again on the same port (empty: nothing is persisted). A stop() or kill() while it runs wins: no server is left after both settle. */
  restart(): Promise<void>
  /**
   * SIGSTOP the server: Redis hanging with its connections open, every command
   * unanswered, for as long as the test needs (unlike `CLIENT PAUSE`, whose
   * length is fixed up front and whose `UNPAUSE` is itself held). Commands
   * sent meanwhile are answered after `thaw()`.
   */
  freeze(): void
  /** SIGCONT a frozen server. */
  thaw(): void
}

const OPTION_NAMES = Object.keys({
  binary: true,
  readyTimeoutMs: true,
} satisfies Record<keyof StartRedisOptions, true>)

const READY_LINE = /ready to accept connections/i

/**
 * The redis-servers this process has running. A child outlives its parent:
 * a process that ends without stopping its servers would leave them
 * running, orphaned, holding their ports. One `'exit'` listener for them all
 * kills them at once on a normal exit (`process.exit()`, an uncaught error:
 * a synchronous `kill`, all an exit handler can do; nothing is persisted),
 * and goes with the last one, so a suite that starts and stops hundreds of
 * servers leaves no listener behind.
 */
const live = new Set<ChildProcess>()

function killLive(): void {
  for (const child of live) child.kill('SIGKILL')
}

function track(child: ChildProcess): void {
  if (live.size === 0) process.on('exit', killLive)
  live.add(child)
  const watchdog = watch(child)
  child.once('exit', () => {
    watchdog?.kill('SIGKILL')
    live.delete(child)
    if (live.size === 0) process.off('exit', killLive)
  })
}

/**
 * A process ended by a signal runs no `'exit'` listener: that is how
 * Vitest's forks pool ends a worker (SIGTERM, then SIGKILL), and how a
 * Ctrl-C, an OOM kill or a supervisor ends a script. A listener for SIGTERM
 * cannot see SIGKILL, and changes what the process does with the signal: a
 * handler that ends the process only when it is the signal's one listener
 * (the gateway's drain, signal-exit) would leave that to ours, ours to it,
 * and the process would go on. So each server gets a watchdog
 * instead: a shell blocked reading a pipe from this process, which the
 * kernel closes however the process ends; it then SIGKILLs the server.
 * Unref'd: it never keeps this process alive. Undefined where no `sh` runs.
 */
function watch(child: ChildProcess): ChildProcess | undefined {
  try {
    const watchdog = spawn(
      'sh',
      ['-c', 'read _; kill -9 "$1" 2>/dev/null', 'watchdog', String(child.pid)],
      {
        stdio: ['pipe', 'ignore', 'ignore'],
      },
    )
    watchdog.on('error', () => {})
    watchdog.stdin?.on('error', () => {})
    ;(watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.()
    watchdog.unref()
    return watchdog
  } catch {
    return undefined
  }
}

/**
 * Spawn the machine's `redis-server` on a free loopback port with persistence
 * off (`--save '' --appendonly no`) and resolve once its log says it accepts
 * connections: no polling, no sleeps.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  // Ignored, a misspelt `readyTimeoutMs` left the 10 s default.
  refuseUnknownOptions(options, OPTION_NAMES, 'startRedis()')
  const binary = options.binary ?? 'redis-server'
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000
  // Handed to setTimeout as it was, 0, -1 or NaN failed every try at once
  // and `Infinity` (meant as "as long as it takes") or 3e9 overflowed to
  // 1 ms: five servers spawned and killed, "redis-server … not ready after
  // Infinity ms" blamed on Redis — or, when one beat the 1 ms, a start.
  if (typeof readyTimeoutMs !== 'number' || !(readyTimeoutMs > 0)) {
    throw optionError(
      'startRedis: readyTimeoutMs',
      'a number of ms above 0 (Infinity = none)',
      readyTimeoutMs,
    )
  }
  // A port picked by the kernel can be taken again before redis binds it; try a few.
  let lastError: unknown
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort()
    try {
      const child = await spawnReady(binary, port, readyTimeoutMs)
      return new ManagedRedis(binary, port, readyTimeoutMs, child)
    } catch (error) {
      lastError = error
    }
  }
  throw lastError
}

class ManagedRedis implements RedisServer {
  readonly url: string
  readonly port: number
  readonly #binary: string
  readonly #readyTimeoutMs: number
  #child: ChildProcess | undefined
  /** The process a stop() or kill() is waiting on, and that wait. */
  #ending: { child: ChildProcess; exited: Promise<void> } | undefined
  #frozen = false
  /** Counts stop() and kill() calls: a restart() that sees one come in while it kills gives way. */
  #stops = 0
  /** The start a restart() is waiting on. */
  #starting: Promise<ChildProcess> | undefined

  constructor(binary: string, port: number, readyTimeoutMs: number, child: ChildProcess) {
    this.#binary = binary
    this.port = port
    this.url = `redis://127.0.0.1:${port}`
    this.#readyTimeoutMs = readyTimeoutMs
    this.#child = child
  }

  stop(): Promise<void> {
    this.#stops++
    return this.#endAfterStart('SIGTERM')
  }

  kill(): Promise<void> {
    this.#stops++
    return this.#endAfterStart('SIGKILL')
  }

  /**
   * Asked while a restart() is starting the server again (a test that
   * failed mid-restart, its cleanup stopping it): the new server is ended
   * once it is up. Before, the stop found no process, resolved at once, and
   * the restarted server ran on after it, until the process exited.
   */
  async #endAfterStart(signal: NodeJS.Signals): Promise<void> {
    if (this.#starting !== undefined) await this.#starting.catch(() => {})
    return this.#end(signal)
  }

  async restart(): Promise<void> {
    const stops = this.#stops
    await this.#end('SIGKILL')
    // A stop() or kill() came in while the old server went: it wins.
    if (this.#stops !== stops) return
    const starting = spawnReady(this.#binary, this.port, this.#readyTimeoutMs)
    this.#starting = starting
    try {
      this.#child = await starting
    } finally {
      if (this.#starting === starting) this.#starting = undefined
    }
  }

  freeze(): void {
    if (!this.#child || this.#frozen) return
    this.#child.kill('SIGSTOP')
    this.#frozen = true
  }

  thaw(): void {
    if (!this.#child || !this.#frozen) return
    this.#child.kill('SIGCONT')
    this.#frozen = false
  }

  async #end(signal: NodeJS.Signals): Promise<void> {
    const child = this.#child
    this.#child = undefined
    const frozen = this.#frozen
    this.#frozen = false
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      // Asked again while an earlier stop() or kill() waits for the exit (an
      // app's signal handler stopping what its run was stopping already):
      // the same wait, not an answer at once. Resolved at once, the app
      // exited with redis-server still running, left a zombie. A kill()
      // then still kills.
      const ending = this.#ending
      if (ending === undefined) return
      if (signal === 'SIGKILL') ending.child.kill('SIGKILL')
      await ending.exited
      return
    }
    const exited = once(child, 'exit').then(() => {})
    const ending = { child, exited }
    this.#ending = ending
    child.kill(signal)
    // A stopped process keeps a SIGTERM pending until it runs again.
    if (frozen) child.kill('SIGCONT')
    try {
      await exited
    } finally {
      if (this.#ending === ending) this.#ending = undefined
    }
  }
}

function spawnReady(binary: string, port: number, readyTimeoutMs: number): Promise<ChildProcess> {
  const child = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--loglevel',
      'notice',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  // A binary that cannot be spawned has no pid and never emits 'exit': nothing to track.
  if (child.pid !== undefined) track(child)
  return new Promise<ChildProcess>((resolve, reject) => {
    let log = ''
    const onData = (chunk: Buffer) => {
      log += chunk.toString('utf8')
      if (READY_LINE.test(log)) settle()
    }
    const onExit = (code: number | null, signal: string | null) =>
      settle(
        new Error(
          `redis-server on port ${port} exited before it was ready (code ${code}, signal ${signal}): ${log.slice(-500)}`,
        ),
      )
    const onError = (error: Error) => settle(error)
    // None for Infinity; a longer wait than a Node timer's reach is cut to it (else it fires at 1 ms).
    const timer = Number.isFinite(readyTimeoutMs)
      ? setTimeout(
          () =>
            settle(new Error(`redis-server on port ${port} not ready after ${readyTimeoutMs} ms`)),
          Math.min(readyTimeoutMs, MAX_TIMER_MS),
        )
      : undefined
    function settle(error?: Error) {
      if (timer !== undefined) clearTimeout(timer)
      child.stdout?.off('data', onData)
      child.off('exit', onExit)
      child.off('error', onError)
      // Keep draining the pipes so a chatty server never blocks on a full buffer.
      child.stdout?.resume()
      child.stderr?.resume()
      if (error) {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
        reject(error)
      } else {
        resolve(child)
      }
    }
    child.stdout?.on('data', onData)
    child.once('exit', onExit)
    child.once('error', onError)
  })
}

/**
 * A free loopback port for redis-server, below the kernel's ephemeral range
 * where the machine has one to read (Linux): `restart()` binds the same port
 * again after `kill()`, and a port from that range could be taken in between
 * by any outgoing connection or any server on port 0 (on a busy test machine,
 * one did: "Address already in use", the restart failed). Elsewhere, or when
 * none of those is free, one the kernel picks.
 */
async function freePort(): Promise<number> {
  const ephemeralLow = ephemeralRangeStart()
  if (ephemeralLow !== undefined && ephemeralLow > LOW_PORT + 1000) {
    for (let tries = 0; tries < 20; tries++) {
      const port = LOW_PORT + Math.floor(Math.random() * (ephemeralLow - LOW_PORT))
      if (await canListen(port)) return port
    }
  }
  return listenedPort(0)
}

/** Where the ports redis is given start (above the well-known and most fixed service ports). */
const LOW_PORT = 10_000

function ephemeralRangeStart(): number | undefined {
  try {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    )
    return Number.isInteger(low) && low > 0 ? low : undefined
  } catch {
    return undefined
  }
}

async function canListen(port: number): Promise<boolean> {
  try {
    await listenedPort(port)
    return true
  } catch {
    return false
  }
}

/** Listen on `port` (0: the kernel's pick) on loopback, close, and say which port it was. */
async function listenedPort(port: number): Promise<number> {
  const server = createServer()
  server.listen(port, '127.0.0.1')
  // Rejects with the listen error (EADDRINUSE) as `once` does for 'error'.
  await once(server, 'listening')
  const address = server.address()
  const bound = typeof address === 'object' && address ? address.port : 0
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return bound
}
