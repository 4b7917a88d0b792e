import { fork } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const childrenDir = new URL('../children/', import.meta.url)

/**
 * Starts `bench/children/<name>` as a separate Node process (so a server and
 * its load generator do not share one event loop) and resolves with the
 * first message it sends, `{ ready: … }`. The child exits when we disconnect
 * or it loses its parent; `stop()` ends it and waits.
 */
export async function startChild(name, args = [], { execArgv = [], readyTimeoutMs = 20_000 } = {}) {
  const child = fork(fileURLToPath(new URL(name, childrenDir)), args, {
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill()
      reject(new Error(`bench child ${name} was not ready within ${readyTimeoutMs} ms`))
    }, readyTimeoutMs)
    child.once('message', (message) => {
      clearTimeout(timer)
      resolve(message.ready)
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`bench child ${name} exited with ${code} before it was ready`))
    })
  })
  let exited = false
  child.once('exit', () => {
    exited = true
  })
  return {
    ready,
    child,
    /**
     * Asks the child something and resolves with its reply (`{ id, reply }`);
     * rejects if the child exits first, so a crashed child fails the section
     * instead of hanging the bench.
     */
    ask(request) {
      return new Promise((resolve, reject) => {
        if (exited) {
          reject(new Error(`bench child ${name} has exited`))
          return
        }
        const id = Math.random().toString(36).slice(2)
        const onExit = (code, signal) => {
          child.off('message', onMessage)
          reject(new Error(`bench child ${name} exited (${signal ?? code}) before it answered`))
        }
        const onMessage = (message) => {
          if (message?.id !== id) return
          child.off('message', onMessage)
          child.off('exit', onExit)
          resolve(message.reply)
        }
        child.on('message', onMessage)
        child.once('exit', onExit)
        child.send({ id, ...request })
      })
    },
    async stop() {
      if (exited) return
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await gone
    },
  }
}

/** In a child: announce readiness, and exit when the parent goes away. */
export function announceReady(ready) {
  process.on('disconnect', () => process.exit(0))
  process.send({ ready })
}

/**
 * User + system CPU time a process has used so far, µs (Linux `/proc`);
 * undefined where that is not available. Read before and after a run to
 * get a server's CPU per request, which the load generator sharing the
 * machine does not blur the way a throughput figure is blurred.
 */
export function cpuMicros(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    // utime and stime (fields 14 and 15 of stat), in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return undefined
  }
}
