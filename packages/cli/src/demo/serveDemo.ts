import { once } from 'node:events'
import type { Io } from '../Command.js'
import { heldStartupSignal, releaseStartupSignals } from '../startupSignals.js'
import { startNaiveChain } from './naiveChain.js'
import { startToolkitChain } from './toolkitChain.js'

/** Keep both chains up until SIGINT/SIGTERM and print requests to try. */
export async function serveDemo(seed: number, io: Io): Promise<void> {
  const [toolkit, naive] = await Promise.all([startToolkitChain(seed), startNaiveChain(seed)])
  // Listened for before the banner: a SIGTERM sent as soon as it is read (a
  // supervisor, a test) found no handler yet and killed the process (1 start
  // in 8) instead of stopping it cleanly.
  const stop = Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')])
  // Stopped while it started (the signal was held, and comes next): it never
  // was up for anyone to try, so no banner.
  const stoppedWhileStarting = heldStartupSignal() !== undefined
  releaseStartupSignals()
  if (!stoppedWhileStarting) printBanner(io, toolkit.url, naive.url)
  await stop
  io.stdout(stoppedWhileStarting ? 'stopping…\n' : '\nstopping…\n')
  await Promise.all([toolkit.close(), naive.close()])
}

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
