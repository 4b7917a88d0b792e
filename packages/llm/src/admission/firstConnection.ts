/**
 * ioredis's states before a client's first connection is up: `wait`
 * (lazyConnect: the first command connects), `connecting`, `connect` (up,
 * not yet answered). A command then is sent once the connection is, bounded
 * by the command timeout, not refused as Redis being down: a store or a
 * limit made just after `new Redis(url)` (as the docs do) would otherwise
 * say "Redis unavailable" on the first call of every process, and count
 * alone until its back-off ended. Once the client has been `ready`, any
 * other state is a lost connection.
 */
export function stillFirstConnecting(status: string | undefined, wasReady: boolean): boolean {
  return !wasReady && (status === 'wait' || status === 'connecting' || status === 'connect')
}
