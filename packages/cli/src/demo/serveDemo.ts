import type { Io } from '../Command.js'
import {
  caughtSignalsDelivered,
  heldStartupSignal,
  releaseStartupSignals,
} from '../startupSignals.js'
import { untilSignalled } from '../untilSignalled.js'
import { startNaiveChain } from './naiveChain.js'
import { startToolkitChain } from './toolkitChain.js'

/** Keep both chains up until SIGINT/SIGTERM/SIGHUP and print requests to try; then drain them. */
export async function serveDemo(seed: number, io: Io): Promise<void> {
  const [toolkit, naive] = await Promise.all([startToolkitChain(seed), startNaiveChain(seed)])
  // A signal the process caught while the chains loaded and started, not yet
  // on to JavaScript (the loop had not polled since: on Node 24, with module
  // hooks, not once while they loaded), is held now, while the hold is on:
  // a stop during start-up, so no banner. Before, it came after the banner.
  await caughtSignalsDelivered()
  // Listened for before the banner: a SIGTERM sent as soon as it is read (a
  // supervisor, a test) found no handler yet and killed the process (1 start
  // in 8) instead of stopping it cleanly. The gateway's rules (untilSignalled):
  // SIGHUP stops too (a terminal closed under `--serve` killed it at once,
  // and a curl still waiting got an empty reply), a second signal stops at
  // once, but not a second SIGHUP, and after a hang-up the binary ends by
  // the signal. The demo writes no line of its own for a forced stop.
  const stop = untilSignalled(() => {})
  // Stopped while it started (the signal was held, and comes next): it never
  // was up for anyone to try, so no banner.
  const stoppedWhileStarting = heldStartupSignal() !== undefined
  releaseStartupSignals()
  try {
    if (!stoppedWhileStarting) printBanner(io, toolkit.url, naive.url)
    // In a caller's process (main() as a library) the next SIGINT or SIGTERM
    // is the caller's; a second SIGHUP is ignored until the drain is over.
    await stop.first
    // Never up for anyone to call: nothing in flight to speak of.
    io.stdout(
      stoppedWhileStarting
        ? 'stopping…\n'
        : `\nstopping… (requests in flight get up to ${DRAIN_MS / 1000} s; Ctrl-C again to stop at once)\n`,
    )
  } finally {
    // Closed however that ends: an io that cannot take the banner (a
    // caller's, writing to a stream it has closed) failed the command and
    // left both chains listening, with nobody to close them, and their
    // signal listeners on the caller's process.
    try {
      await Promise.all([toolkit.close(DRAIN_MS), naive.close(DRAIN_MS)])
    } finally {
      stop.release()
    }
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
