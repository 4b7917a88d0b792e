import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'

export interface StartRedisOptions {
  /** The server binary. Default `redis-server` (found on PATH). */
  binary?: string | undefined
  /** Time allowed for the server to say it is ready, in ms. Default 10 000. */
  readyTimeoutMs?: number | undefined
}

/** A throwaway `redis-server` on 127.0.0.1, no persistence. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  /** Shut the server down and wait for the process to exit. Idempotent. */
  stop(): Promise<void>
  /** SIGKILL the server (Redis going down without warning); resolves once the process is gone. */
  kill(): Promise<void>
  /** Start the server again on the same port (empty: nothing is persisted). */
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

const READY_LINE = /ready to accept connections/i

/**
 * Spawn the machine's `redis-server` on a free loopback port with persistence
 * off (`--save '' --appendonly no`) and resolve once its log says it accepts
 * connections: no polling, no sleeps.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const binary = options.binary ?? 'redis-server'
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000
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
  #frozen = false

  constructor(binary: string, port: number, readyTimeoutMs: number, child: ChildProcess) {
    this.#binary = binary
    this.port = port
    this.url = `redis://127.0.0.1:${port}`
    this.#readyTimeoutMs = readyTimeoutMs
    this.#child = child
  }

  stop(): Promise<void> {
    return this.#end('SIGTERM')
  }

  kill(): Promise<void> {
    return this.#end('SIGKILL')
  }

  async restart(): Promise<void> {
    await this.#end('SIGKILL')
    this.#child = await spawnReady(this.#binary, this.port, this.#readyTimeoutMs)
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
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill(signal)
    // A stopped process keeps a SIGTERM pending until it runs again.
    if (frozen) child.kill('SIGCONT')
    await exited
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
    const timer = setTimeout(
      () => settle(new Error(`redis-server on port ${port} not ready after ${readyTimeoutMs} ms`)),
      readyTimeoutMs,
    )
    function settle(error?: Error) {
      clearTimeout(timer)
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

async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
