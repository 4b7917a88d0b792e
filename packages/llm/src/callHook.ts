import { isThenable } from '@hourglass/core'

/** The promises hooks returned that a handler was added to (weakly: none is kept). */
const handled = new WeakSet<PromiseLike<unknown>>()

/**
 * Calls a caller's hook (`onAttempt`, `ProviderLimits`' `onWait`, a
 * `logger`) whose failure must not change what Hourglass decides: what it
 * throws is ignored, and so is a promise it returns that rejects — an async
 * hook (`async (record) => shipLogs(record)`) whose log shipper is down would
 * otherwise reject with nobody listening, an unhandled rejection that ends
 * the process. The hook is not awaited.
 */
export function callHook<A extends unknown[]>(
  hook: ((...args: A) => unknown) | undefined,
  ...args: A
): void {
  if (hook === undefined) return
  try {
    const returned = hook(...args)
    // Once per promise: a hook handing back one pending promise on every
    // call (its connection's) got a handler per call, each kept (20 MB per
    // 200,000 calls), as the gateway's logger did.
    if (isThenable(returned) && !handled.has(returned)) {
      handled.add(returned)
      returned.then(undefined, ignore)
    }
  } catch {
    // A hook must not change the outcome.
  }
}

/** Calls `logger.warn(message)` as `callHook` calls a hook: as a method, failures ignored (warnings are rare: a closure each is fine). */
export function warnSafely(logger: { warn(message: string): void }, message: string): void {
  callHook((line: string) => logger.warn(line), message)
}

/**
 * News that something failing works again (Redis is back): `logger.info`
 * when the logger has one, as `warnSafely` calls `warn`. At `warn` an alert
 * on warning lines fired again for the recovery; a logger with `warn` alone
 * (the older shape) still hears of it there.
 */
export function infoSafely(
  logger: { warn(message: string): void; info?: ((message: string) => void) | undefined },
  message: string,
): void {
  if (typeof logger.info === 'function') {
    callHook(
      (line: string) => (logger.info as (message: string) => void).call(logger, line),
      message,
    )
  } else warnSafely(logger, message)
}

function ignore(): void {}
