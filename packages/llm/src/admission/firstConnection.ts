/**
 * ioredis's states before a client's first connection is up: `wait`
 * (lazyConnect: nothing dialled yet), `connecting`, `connect` (up, not yet
 * answered). A command then waits for the connection (`firstConnection`),
 * bounded by the command timeout, and is not refused as Redis being down: a
 * store or a limit made just after `new Redis(url)` (as the docs do) would
 * otherwise say "Redis unavailable" on the first call of every process, and
 * count alone until its back-off ended. Once the client has been `ready`, any
 * other state is a lost connection.
 */
export function stillFirstConnecting(status: string | undefined, wasReady: boolean): boolean {
  return !wasReady && (status === 'wait' || status === 'connecting' || status === 'connect')
}

/**
 * What of an ioredis client (`Redis` or `Cluster`) its first connection is
 * waited on with. All optional: a client without them is sent its command as
 * it is, as before.
 */
export interface FirstConnectionClient {
  readonly status?: string | undefined
  connect?(): Promise<unknown>
  once?(event: 'ready' | 'close', listener: () => void): unknown
  removeListener?(event: 'ready' | 'close', listener: () => void): unknown
}

/**
 * The first connection each client is being waited for, shared by every
 * user of the client in this process — the cooldown store and the limits on
 * one client, and their concurrent first commands: ioredis's `connect()`
 * throws "Redis is already connecting/connected" when called twice.
 */
const comingUp = new WeakMap<object, Promise<void>>()

/**
 * Resolves once `client` (`stillFirstConnecting`) is `ready`, rejects if
 * its first connection closes first; undefined when the client gives no
 * way to wait (the command is then sent as it is).
 *
 * Sent at once instead, a command was refused by a client with
 * `enableOfflineQueue: false` — "Stream isn't writeable" — while it was
 * `connecting`; and one made with `lazyConnect: true` (status `wait`) is
 * connected by nobody else: ioredis dials on the first command, then
 * refuses that command. The first commands of every process failed, the
 * store counted as down, and a cooldown written then was never shared. So a
 * `wait` client is connected here, once (as BullMQ does with a client
 * passed to it), and a connecting one is waited for until `ready`. The
 * caller bounds the wait (the command timeout): `connect()` itself goes on.
 */
export function firstConnection(client: FirstConnectionClient): Promise<void> | undefined {
  const pending = comingUp.get(client)
  if (pending !== undefined) return pending
  let up: Promise<void>
  if (client.status === 'wait' && typeof client.connect === 'function') {
    const connect = client.connect.bind(client)
    // Called now, not on a later tick: the client reads `connecting` at
    // once. A `connect` that throws rejects the wait instead.
    up = new Promise<unknown>((resolve) => resolve(connect())).then(noop)
  } else if (typeof client.once === 'function' && typeof client.removeListener === 'function') {
    const once = client.once.bind(client)
    const off = client.removeListener.bind(client)
    up = new Promise<void>((resolve, reject) => {
      const ready = () => {
        off('close', closed)
        resolve()
      }
      const closed = () => {
        off('ready', ready)
        reject(new Error('the first connection to Redis closed before it was ready'))
      }
      once('ready', ready)
      once('close', closed)
    })
  } else {
    return undefined
  }
  comingUp.set(client, up)
  // Settled: the next first use (there is none once `ready`) starts anew.
  // Handled here too, so a rejection nobody else awaits is no unhandled one.
  up.then(
    () => comingUp.delete(client),
    () => comingUp.delete(client),
  )
  return up
}

/**
 * `send()`'s outcome, bounded by `bound` (the command timeout), sent once
 * `connected` (a first connection waited on, `firstConnection`) is up, at
 * once without one. A command `bound` gave up on while the connection came
 * up is not sent when it does: the caller has decided without Redis (a
 * count made by the local limiter, a cooldown left unshared), and sent
 * late it was counted twice — one count of the fleet's window per back-off
 * of a slow start, all at once when Redis came up — or a cooldown reported
 * during the wait ran its whole wait from then, holding the fleet back for
 * a limit that had ended. A command already sent when the bound fires
 * still goes on (ioredis does not take back what it sent).
 */
export async function sentOnceConnected<T>(
  connected: Promise<void> | undefined,
  send: () => Promise<T>,
  bound: (command: Promise<T>) => Promise<T>,
): Promise<T> {
  if (connected === undefined) return bound(send())
  let givenUp = false
  try {
    return await bound(
      connected.then(() => {
        if (givenUp) throw new Error('not sent: given up on while the first connection came up')
        return send()
      }),
    )
  } catch (error) {
    givenUp = true
    throw error
  }
}

function noop(): void {}
