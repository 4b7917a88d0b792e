import { type ChildProcess, fork } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export interface Worker {
  port: number
  /** Every log line the worker's limiter wrote, in order. */
  logs: string[]
  /** Resolves the next time the worker's Redis client becomes ready. */
  nextRedisReady(): Promise<void>
  stop(): Promise<void>
}

const workerPath = fileURLToPath(new URL('./gatewayWorker.mjs', import.meta.url))
const llmDist = fileURLToPath(new URL('../../../../llm/dist/index.js', import.meta.url))

/** Start one gateway-like process and resolve once it listens and its Redis client is ready. */
export async function spawnWorker(env: Record<string, string>): Promise<Worker> {
  if (!existsSync(llmDist))
    throw new Error(`${llmDist} does not exist: run \`npm run build\` first`)
  const child: ChildProcess = fork(workerPath, [], {
    execArgv: [],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8')
  })
  const logs: string[] = []
  let readyWaiters: Array<() => void> = []
  let port: number | undefined
  let redisReady = false
  const started = new Promise<void>((resolve, reject) => {
    const check = () => {
      if (port !== undefined && redisReady) resolve()
    }
    child.on('message', (message: { type: string; port?: number; message?: string }) => {
      if (message.type === 'log') logs.push(String(message.message))
      if (message.type === 'listening') port = message.port
      if (message.type === 'redis-ready') {
        redisReady = true
        const waiters = readyWaiters
        readyWaiters = []
        for (const w of waiters) w()
      }
      check()
    })
    child.once('exit', (code) => reject(new Error(`worker exited early (${code}): ${stderr}`)))
  })
  await started
  return {
    port: port as number,
    logs,
    nextRedisReady: () => new Promise<void>((resolve) => readyWaiters.push(resolve)),
    async stop() {
      if (child.exitCode !== null) return
      const exited = once(child, 'exit')
      child.send('stop')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    },
  }
}
