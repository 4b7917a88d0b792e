import type { Command } from '../Command.js'
import { exitOnStopSignals } from '../exitOnStopSignals.js'
import { intOption, parseCommandArgs } from '../parseCommandArgs.js'
import { servesUntilStopped } from '../servesUntilStopped.js'
import { caughtSignalsDelivered, releaseStartupSignals } from '../startupSignals.js'
import { UsageError } from '../UsageError.js'

export const demoCommand: Command = {
  name: 'demo',
  summary: 'a three-hop chain with and without Hourglass, side by side',
  help: `Usage: hourglass demo [--serve] [--json] [--seed <n>]

Starts, on loopback, an edge → api → model service → fake LLM provider chain
wired with Hourglass, and a naive twin (30 s timeout per hop, a generic retry
loop, no deadline propagation). Sends the same requests (budgets 300 ms, 1 s,
2 s; a provider with a long tail, slow first tokens, 429s and 529s) through
both and prints, side by side: answers on time, 504s and when they arrived,
upstream work still running after the client gave up, paid generations per
delivered answer, and one request's slices. Ends by itself in ~10 s.

Options:
  --serve      keep both chains running and print curl commands to try
  --json       print the figures as JSON instead of the report (not --serve)
  --seed <n>   seed for every random draw (default 7): same seed, same story
  -h, --help   this help
`,
  async run(args, io) {
    const { values } = parseCommandArgs('demo', args, {
      allowPositionals: false,
      options: {
        serve: { type: 'boolean' },
        json: { type: 'boolean' },
        seed: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
    if (values.help) {
      io.stdout(demoCommand.help)
      return 0
    }
    // A run has nothing to drain: a signal ends it, from its first moment on,
    // PID 1 in a container included. --serve stops cleanly on one, and holds
    // it until it listens (serveDemo).
    if (!values.serve) {
      // A signal caught while the binary loaded reaches the hold first (see probe).
      await caughtSignalsDelivered()
      exitOnStopSignals()
      releaseStartupSignals()
    }
    const seed = intOption('demo', 'seed', values.seed, 7, 0)
    if (values.serve && values.json) {
      // --serve prints addresses and curl commands and measures nothing: no figures to print.
      throw new UsageError(
        'hourglass demo: --json prints the figures of a run; --serve runs no traffic and has none (use one or the other)',
      )
    }
    // Loaded only now: the chains pull in Express, undici and every package,
    // which a bad argument or --help should not wait for.
    const [{ progressLine }, { renderDemo }, { runDemo }, { serveDemo }] = await Promise.all([
      import('../progressLine.js'),
      import('../demo/renderDemo.js'),
      import('../demo/runDemo.js'),
      import('../demo/serveDemo.js'),
    ])
    if (values.serve) {
      // Its banner is a notice, not a run's figures: see servesUntilStopped.
      servesUntilStopped()
      await serveDemo(seed, io)
      return 0
    }
    const progress = progressLine(io)
    progress.update('starting both chains…')
    const figures = await runDemo({
      seed,
      onProgress: ({ done, total, phase }) =>
        progress.update(
          phase === 'traffic'
            ? `sending the same traffic through both chains: ${done}/${total} answered or given up`
            : 'waiting for upstream work to stop…',
        ),
    })
    progress.clear()
    io.stdout(values.json ? `${JSON.stringify(figures, null, 2)}\n` : renderDemo(figures))
    return 0
  },
}
