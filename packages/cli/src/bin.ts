#!/usr/bin/env node
import { processIo } from './Command.js'
import { holdStartupSignals, releaseStartupSignals } from './startupSignals.js'

// First, before anything heavy loads: a SIGTERM while the command starts is
// held for its handlers instead of killing the process without a word.
holdStartupSignals()
const { main } = await import('./main.js')

// A reader that went away (`| head`, a closed log pipe) is no reason to stop:
// without a listener, its EPIPE would end the command with a stack trace —
// the gateway mid-service, or a probe before it printed its result to a
// stdout that is still open. What a gone reader would have read is dropped.
//
// Any other failure to write stdout is no reader's choice: `probe --json >
// report.json` on a full disk (ENOSPC), or an I/O error, loses the output the
// command exists for. Dropped as silently, it ended in exit 0 and an empty
// file; it is said in one line on stderr instead, and the exit code is 1.
let stdoutError: Error | undefined
process.stdout.on('error', (error) => {
  stdoutError ??= error
})
process.stderr.on('error', () => {})

const code = await main(process.argv.slice(2), processIo())
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
  process.stderr.write(lost === undefined ? '' : lostOutput(lost), () =>
    process.exit(lost !== undefined && code === 0 ? 1 : code),
  )
})

function lostOutput(failure: NodeJS.ErrnoException): string {
  const why = failure.code ?? failure.message.split('\n')[0]
  return `hourglass: could not write its output to stdout (${why}): the output is incomplete\n`
}
