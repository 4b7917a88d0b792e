import { type ChildProcess, fork } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'

export interface SlowServerReport {
  /** When each job's request arrived (`monotonicMs()`). */
  arrived: Record<string, number>
  /** When each job's connection closed (`monotonicMs()`). */
  closed: Record<string, number>
  /** When the server's own event loop did not run for over 20 ms (`monotonicMs()`), and for how long. */
  stalls: { from: number; ms: number }[]
}

export interface SlowServer {
  url: string
  report(): Promise<SlowServerReport>
  stop(): Promise<void>
}

/**
 * CLOCK_MONOTONIC in ms, the clock the slow server's times are on: one clock
 * for every process on this host (performance.now() is too, but from each
 * process's own start; performance.timeOrigin is a wall-clock reading).
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

/** Start support/slowServer.mjs in a child process (a server that never answers). */
export async function startSlowServer(): Promise<SlowServer> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./slowServer.mjs', import.meta.url)), {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const [{ port }] = (await once(child, 'message')) as [{ port: number }]
  return {
    url: `http://127.0.0.1:${port}/generate`,
    async report() {
      child.send('report')
      const [message] = await once(child, 'message')
      return message as SlowServerReport
    },
    async stop() {
      if (child.exitCode !== null) return
      const exited = once(child, 'exit')
      child.send('exit')
      await exited
    },
  }
}
