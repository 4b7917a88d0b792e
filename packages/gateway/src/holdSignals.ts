import { setImmediate } from 'node:timers'
import { STOP_SIGNALS } from './drainOnSignals.js'

export interface HeldSignals {
  /** Aborts when a held signal arrives: a wait that only matters to a process that goes on can stop. */
  readonly signal: AbortSignal
  /** The signal held so far (until `release()`), else undefined. */
  readonly held: NodeJS.Signals | undefined
  /** Stops holding; a signal held meanwhile is delivered again once the caller has resumed. */
  release(): void
}

/**
 * Holds SIGINT, SIGTERM and SIGHUP (STOP_SIGNALS) while a server starts, for a caller that handles
 * them once it has something to stop: `hourglass gateway` installs its
 * handlers when `startGateway` resolves. Before, a signal in that window —
 * most of it the wait for Redis — met no handler and killed the process
 * (143, no drain, no shutdown line), where the same signal a moment later
 * drained and exited 0.
 *
 * Only a signal nobody listens to yet is held: one the caller already
 * handles reaches its handler as before. The first held signal is
 * delivered again on `release()`, after the microtasks in which
 * `await startGateway(…)` resumes, so a handler installed right after it
 * sees it (none installed: its default action, as if it had just arrived).
 * Held is postponed, never swallowed. A second signal is not held: it takes
 * its default action and ends the process at once, as a second signal
 * during the drain does.
 */
export function holdSignals(): HeldSignals {
  const controller = new AbortController()
  let held: NodeJS.Signals | undefined
  const holding = STOP_SIGNALS.filter((name) => process.listenerCount(name) === 0)
  const stopHolding = () => {
    for (const name of holding) process.off(name, onSignal)
  }
  const onSignal = (signal: NodeJS.Signals) => {
    held = signal
    stopHolding()
    controller.abort()
  }
  for (const name of holding) process.on(name, onSignal)
  return {
    signal: controller.signal,
    get held() {
      return held
    },
    release() {
      stopHolding()
      const signal = held
      held = undefined
      if (signal === undefined) return
      // The check phase runs after every pending microtask: the caller's
      // continuation, and the handlers it installs, come first. Node's own
      // setImmediate: under an app test's fake timers (startGateway run
      // in-process) the global one held the signal until fake time moved.
      setImmediate(() => {
        if (process.listenerCount(signal) > 0) process.emit(signal, signal)
        else process.kill(process.pid, signal)
      })
    },
  }
}
