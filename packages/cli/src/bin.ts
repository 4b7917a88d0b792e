#!/usr/bin/env node
// The one static import: startupSignals.js imports nothing. A static import
// is evaluated before this file's first line, and unlessStopped.js pulls in
// all of @hourglass/core: a SIGTERM while it loaded killed the command
// without a word, and as PID 1 (no handler yet: the kernel drops it) was
// lost, the gateway then serving until killed. Everything else loads after
// the hold.
import {
  caughtSignalsDelivered,
  holdStartupSignals,
  releaseStartupSignals,
  signalToEndBy,
  startupStopSignal,
} from './startupSignals.js'

/** How long work a stop abandoned, and let go of, gets to end before the process exits without it. */
const ABANDONED_WORK_GRACE_MS = 1500

// First, before anything heavy loads: a SIGTERM while the command starts is
// held for its handlers instead of killing the process without a word.
holdStartupSignals()
const [{ processIo }, { isServingUntilStopped }, { abandonedWorkSettled }, { main }] =
  await Promise.all([
    import('./Command.js'),
    import('./servesUntilStopped.js'),
    import('./unlessStopped.js'),
    import('./main.js'),
  ])

// A reader that went away (`| head`, a closed log pipe) is no reason to stop:
// without a listener, its EPIPE would end the command with a stack trace —
// the gateway mid-service, or a probe before it printed its result to a
// stdout that is still open. What a gone reader would have read is dropped.
//
// Any other failure to write stdout is no reader's choice: `probe --json >
// report.json` on a full disk (ENOSPC), or an I/O error, loses the output the
// command exists for. Dropped as silently, it ended in exit 0 and an empty
// file; it is said in one line on stderr instead, and the exit code is 1 —
// but for a command that serves until stopped (`servesUntilStopped`), whose
// lines there are notices: said, and its code stands.
let stdoutError: Error | undefined
process.stdout.on('error', (error) => {
  stdoutError ??= error
})
process.stderr.on('error', () => {})

const code = await main(process.argv.slice(2), processIo())
// A signal caught while the command ran without polling (it loaded and
// finished in one go), still on its way to JavaScript: delivered to the
// command's handlers, or held, before the hold ends and before the exit,
// which would forget it (a probe signalled as it loaded exited 1, unstopped).
await caughtSignalsDelivered()
// A signal still held: the command ended by itself (a bad config, a usage
// error) before it had anything to stop; its exit code stands.
releaseStartupSignals({ redeliver: false })
// Exit once what was printed is flushed: the demo's abandoned naive work (its
// very point) must not hold the process open.
// A write that failed has said so by now: in an 'error' event, or, when the
// event is still to come, in `errored` (set as it fails, cleared after the
// event). One still pending reports in the flush below. The empty write's
// own error (writing even nothing to /dev/full fails) is no lost output.
const failedEarlier = stdoutError ?? process.stdout.errored
const pending = process.stdout.writableLength > 0
process.stdout.write('', (error) => {
  const failure = (failedEarlier ?? (pending ? error : undefined)) as
    | NodeJS.ErrnoException
    | null
    | undefined
  // A gone reader (EPIPE) is no failure: see above.
  const lost = failure != null && failure.code !== 'EPIPE' ? failure : undefined
  process.stderr.write(
    lost === undefined ? '' : lostOutput(lost),
    () => void exit(lost !== undefined && code === 0 && !isServingUntilStopped() ? 1 : code),
  )
})

/**
 * Exits with `code` — unless start-up work a stop signal abandoned (a host
 * lookup on a hung resolver, a FIFO read whose writer stays silent) still
 * holds one of libuv's threads, which Node's exit would wait for: then the
 * signal's default action ends the process at once, as a shell reports it
 * (143 for SIGTERM). Work let go of (a FIFO's reader released) gets a
 * moment to end, and the code stands.
 */
async function exit(code: number): Promise<never> {
  const stoppedBy = startupStopSignal().reason as NodeJS.Signals | undefined
  // A hang-up that stopped the command ends the process by itself (129)
  // where the command stopped cleanly (`endBySignal`, or 0 after a stop at
  // start-up): Node 20's exit crashed on the tty that hung up. Any other
  // exit code (a usage error found first) stands.
  const ending = signalToEndBy() ?? (stoppedBy === 'SIGHUP' && code === 0 ? stoppedBy : undefined)
  const signal =
    ending ?? (!(await abandonedWorkSettled(ABANDONED_WORK_GRACE_MS)) ? stoppedBy : undefined)
  if (signal !== undefined) {
    for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.removeAllListeners(name)
    process.kill(process.pid, signal)
  }
  // Still here (PID 1, where the kernel drops a signal with no handler): the
  // code — after the abandoned work, which Node's exit waits for (a hung
  // lookup: run a container with `--init`).
  process.exit(code)
}

function lostOutput(failure: NodeJS.ErrnoException): string {
  const why = failure.code ?? failure.message.split('\n')[0]
  return `hourglass: could not write its output to stdout (${why}): the output is incomplete\n`
}
