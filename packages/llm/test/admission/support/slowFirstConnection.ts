/**
 * An ioredis client whose first connection is slow to come up: connected,
 * its ready check unanswered (status `connect`) — a Redis frozen or still
 * loading its dataset when the process started, a proxy whose backend is
 * not up yet — until `comeUp()`, if ever. `runs` counts the scripts it was
 * sent.
 */
export function slowFirstConnection() {
  const listeners = new Set<() => void>()
  return {
    status: 'connect',
    runs: 0,
    /** The `ready` and `close` listeners waiting for the connection. */
    listeners,
    once(_event: 'ready' | 'close', listener: () => void) {
      listeners.add(listener)
    },
    removeListener(_event: 'ready' | 'close', listener: () => void) {
      listeners.delete(listener)
    },
    async evalsha(): Promise<unknown> {
      this.runs++
      return [1, 60_000]
    },
    async eval(): Promise<unknown> {
      this.runs++
      return [1, 60_000]
    },
    /** Its `ready` comes: the commands waiting for it are let go. */
    comeUp() {
      this.status = 'ready'
      for (const listener of [...listeners]) listener()
    },
  }
}
