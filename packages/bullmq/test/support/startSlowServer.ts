import { type ChildProcess, fork } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'

export interface SlowServer {
  url: string
  /** When each job's request arrived and its connection closed (performance.timeOrigin + now()). */
  report(): Promise<{ arrived: Record<string, number>; closed: Record<string, number> }>
  stop(): Promise<void>
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
      return message as { arrived: Record<string, number>; closed: Record<string, number> }
    },
    async stop() {
      if (child.exitCode !== null) return
      const exited = once(child, 'exit')
      child.send('exit')
      await exited
    },
  }
}
