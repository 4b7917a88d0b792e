/** What of a Redis client a Lua script is run with (ioredis's `evalsha` and `eval`). */
export interface ScriptRunner {
  evalsha(sha1: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>
}

/** Whether `client` has what a script is run with. */
export function canRunScripts<T>(client: T): client is T & ScriptRunner {
  return (
    typeof client === 'object' &&
    client !== null &&
    typeof (client as Partial<ScriptRunner>).evalsha === 'function' &&
    typeof (client as Partial<ScriptRunner>).eval === 'function'
  )
}

/**
 * Runs `script` (whose SHA-1 is `sha1`) by its hash, sending its body once
 * when the server does not have it (`NOSCRIPT`: its first use on this
 * server, or after a restart or a `SCRIPT FLUSH`). `args` are the keys
 * (`numKeys` of them) and then the arguments, as `EVALSHA` takes them.
 * `first` sends the `EVALSHA` (waiting for the connection, bounding the
 * command); `again` bounds the `EVAL` after a `NOSCRIPT`, a command of its
 * own: under one bound for both, a Redis answering each in 150 ms of a 250 ms
 * `commandTimeoutMs` failed every first use of a script (a fresh or restarted
 * server), and the fleet's limits went local, each instance admitting the
 * whole limit.
 */
export async function evalScript(
  client: ScriptRunner,
  sha1: string,
  script: string,
  numKeys: number,
  args: ReadonlyArray<string | number>,
  first: (send: () => Promise<unknown>) => Promise<unknown>,
  again: (command: Promise<unknown>) => Promise<unknown>,
): Promise<unknown> {
  try {
    return await first(() => client.evalsha(sha1, numKeys, ...args))
  } catch (error) {
    if (!String((error as Error | undefined)?.message).includes('NOSCRIPT')) throw error
    // Redis answered the EVALSHA: the body it asks for is one more round trip.
    return await again(client.eval(script, numKeys, ...args))
  }
}
