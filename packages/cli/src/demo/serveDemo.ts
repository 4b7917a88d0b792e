import { constants } from 'node:os'
import type { Io } from '../Command.js'
import {
  endBySignal,
  heldStartupSignal,
  isHourglassBinary,
  releaseStartupSignals,
} from '../startupSignals.js'
import { startNaiveChain } from './naiveChain.js'
import { startToolkitChain } from './toolkitChain.js'

/**
 * What stops the demo with a drain. SIGHUP as in the gateway: a terminal
 * closed under `--serve` (or a process manager's HUP) killed it at once,
 * and a curl still waiting got an empty reply.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/** Keep both chains up until SIGINT/SIGTERM/SIGHUP and print requests to try; then drain them. */
export async function serveDemo(seed: number, io: Io): Promise<void> {
  const [toolkit, naive] = await Promise.all([startToolkitChain(seed), startNaiveChain(seed)])
  // Listened for before the banner: a SIGTERM sent as soon as it is read (a
  // supervisor, a test) found no handler yet and killed the process (1 start
  // in 8) instead of stopping it cleanly. One handler, judging each signal
  // as it comes: a second one must never meet a listener for the first.
  const binary = isHourglassBinary()
  let first: NodeJS.Signals | undefined
  let hungUp = false
  let stopping: (signal: NodeJS.Signals) => void = () => {}
  const stop = new Promise<NodeJS.Signals>((resolve) => {
    stopping = resolve
  })
  const release = () => {
    for (const name of STOP_SIGNALS) process.off(name, onSignal)
  }
  // Drained, not dropped: a curl still waiting got an empty reply (curl
  // exit 52). Bounded, as the naive chain may hold a request for minutes;
  // a second signal stops at once (in a caller's process: its default
  // action, or the caller's handler) — but not a second SIGHUP: a terminal
  // closed sends its hang-up twice (the kernel to the foreground group, the
  // shell to its jobs), and that is no one asking to skip the drain.
  const onSignal = (signal: NodeJS.Signals) => {
    // The terminal may be gone: the binary ends by the signal once drained
    // (129 in a shell), as Node 20's exit crashed on a tty that hung up.
    if (signal === 'SIGHUP') {
      hungUp = true
      endBySignal(signal)
    }
    if (first === undefined) {
      first = signal
      // In a caller's process (main() as a library) the next signal is the caller's.
      if (!binary) release()
      return stopping(signal)
    }
    if (signal === 'SIGHUP') return
    if (hungUp) {
      // Ended by the signal's default action, not process.exit, which
      // resets the tty that hung up (see untilSignalled).
      for (const name of STOP_SIGNALS) process.removeAllListeners(name)
      process.kill(process.pid, signal)
    }
    process.exit(128 + constants.signals[signal])
  }
  for (const name of STOP_SIGNALS) process.on(name, onSignal)
  // Stopped while it started (the signal was held, and comes next): it never
  // was up for anyone to try, so no banner.
  const stoppedWhileStarting = heldStartupSignal() !== undefined
  releaseStartupSignals()
  if (!stoppedWhileStarting) printBanner(io, toolkit.url, naive.url)
  await stop
  // Never up for anyone to call: nothing in flight to speak of.
  io.stdout(
    stoppedWhileStarting
      ? 'stopping…\n'
      : `\nstopping… (requests in flight get up to ${DRAIN_MS / 1000} s; Ctrl-C again to stop at once)\n`,
  )
  try {
    await Promise.all([toolkit.close(DRAIN_MS), naive.close(DRAIN_MS)])
  } finally {
    release()
  }
}

/** How long requests in flight get when the demo is stopped. */
const DRAIN_MS = 5000

function printBanner(io: Io, toolkitUrl: string, naiveUrl: string): void {
  const curl = (url: string, budgetMs: number) =>
    `  curl -si ${url} -H 'content-type: application/json' \\\n` +
    `       -H 'x-deadline-remaining-ms: ${budgetMs}' -d '{"question":"why?"}'\n`
  io.stdout(
    'Both chains are up (edge → api → model service → fake LLM provider).\n\n' +
      `toolkit chain: ${toolkitUrl}\n` +
      `naive chain:   ${naiveUrl}\n\n` +
      'A tight budget through the toolkit chain: mostly a 504 by the deadline, its\n' +
      'body naming the budget you sent and the slice that ran out: one of the api\n' +
      "service's (dns, preprocess, model, write), or the edge's own (api), e.g.\n" +
      '  {"error":"deadline_exceeded","budgetMs":300,"elapsedMs":236,"slice":"model"}\n' +
      curl(toolkitUrl, 300) +
      'A comfortable one (mostly a 200):\n' +
      curl(toolkitUrl, 2000) +
      'The naive chain ignores the budget (add --max-time 0.3 to give up like a user):\n' +
      curl(naiveUrl, 300) +
      '\nCtrl-C to stop.\n',
  )
}
