import { constants } from 'node:os'
import { endBySignal, isHourglassBinary } from './startupSignals.js'

/**
 * What stops the gateway with a drain. SIGHUP as SIGTERM: a terminal closed
 * under it, or a process manager's HUP, killed it at once and cut every
 * request in flight; it reads its config once, so a hang-up is no reload.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/**
 * Resolves `first` on the first SIGINT, SIGTERM or SIGHUP. In the binary, a second one, during
 * the drain, exits at once (128 + the signal's number, as a shell reports it):
 * the operator who presses Ctrl-C again, or the supervisor that signals
 * twice, does not want to wait out `--drain-timeout-ms`. `forced` writes
 * the shutdown record first (the drain's own line never comes), told the
 * signal and the one that began the stop.
 */
export function untilSignalled(forced: (signal: NodeJS.Signals, first: NodeJS.Signals) => void): {
  first: Promise<NodeJS.Signals>
  release(): void
} {
  let signalled: (signal: NodeJS.Signals) => void = () => {}
  const first = new Promise<NodeJS.Signals>((resolve) => {
    signalled = resolve
  })
  let firstSignal: NodeJS.Signals | undefined
  let hungUp = false
  const onSignal = (signal: NodeJS.Signals) => {
    // Whenever it comes, a hang-up ends the process by the signal once the
    // drain is over: the terminal may be gone, and Node 20's exit crashed on it.
    if (signal === 'SIGHUP') {
      hungUp = true
      endBySignal(signal)
    }
    if (firstSignal === undefined) {
      firstSignal = signal
      // In a caller's process (main() as a library) the next SIGINT or
      // SIGTERM is the caller's (its handlers, or Node's default action): a
      // second during the gateway's drain called process.exit(130) there,
      // past its own handlers. SIGHUP stays listened to, ignored, until
      // release(): a terminal sends two, and without a listener the second
      // killed the caller mid-drain.
      if (!isHourglassBinary()) {
        for (const name of ['SIGINT', 'SIGTERM'] as const) process.off(name, onSignal)
      }
      return signalled(signal)
    }
    // A terminal closed sends its hang-up twice (the kernel to the
    // foreground group, the shell to its jobs), also after a Ctrl-C: a
    // SIGHUP is no operator asking to skip the drain.
    if (signal === 'SIGHUP') return
    // In a caller's process only a SIGHUP comes here (see above).
    if (!isHourglassBinary()) return
    forced(signal, firstSignal)
    if (hungUp) {
      // The terminal hung up: `process.exit` would reset the tty that is
      // gone, which crashed Node 20. Raised again with no listener, the
      // signal's default action ends the process without touching it (and
      // a shell reports 128 + its number all the same). That relies on
      // libuv putting the default action back when a signal's last
      // listener goes (checked in /proc/self/status: SigCgt cleared), not
      // Node's own start-up handler, which resets the tty too (SIGABRT).
      // The forced line is out by now: the CLI's pino destination is sync.
      for (const name of STOP_SIGNALS) process.removeAllListeners(name)
      process.kill(process.pid, signal)
    }
    // Still here: not hung up, or the kernel dropped the signal (PID 1).
    process.exit(128 + constants.signals[signal])
  }
  for (const name of STOP_SIGNALS) process.on(name, onSignal)
  return {
    first,
    release() {
      for (const name of STOP_SIGNALS) process.off(name, onSignal)
    },
  }
}
