import { constants } from 'node:os'
import { clearProgressLines } from './progressLine.js'
import { isHourglassBinary } from './startupSignals.js'

/**
 * For a command with nothing to drain (probe, a demo run): SIGINT or SIGTERM
 * ends it as the signal's default action does — and also where that action
 * never comes. PID 1 in a container started without --init gets no default
 * action: the kernel ignores a signal it has no handler for, so `docker stop`
 * waited its 10 s and killed, Ctrl-C in `docker run -it` did nothing, and a
 * probe ran on to its last sample and exited 0. In the binary only.
 */
export function exitOnStopSignals(): void {
  // A caller's process (main() as a library) keeps its own signal handling.
  if (!isHourglassBinary()) return
  const onSignal = (signal: NodeJS.Signals) => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    // Its output ends here: a progress line drawn on a terminal is wiped, not
    // left half-written before the shell's prompt (a terminal's writes are
    // synchronous: done before the signal ends the process).
    clearProgressLines()
    // Raised again with no listener: its default action, so a shell or a
    // supervisor sees the process killed by the signal, as before.
    process.kill(process.pid, signal)
    // Still here: the kernel ignored it (PID 1). The code a shell reports for it.
    process.exit(128 + constants.signals[signal])
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
}
