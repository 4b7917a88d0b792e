#!/usr/bin/env node
import { processIo } from './Command.js'
import { main } from './main.js'

// A reader that went away (`| head`, a closed log pipe) is no reason to stop:
// without a listener, its EPIPE would end the command with a stack trace —
// the gateway mid-service, or a probe before it printed its result to a
// stdout that is still open. What cannot be written is dropped.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {})

const code = await main(process.argv.slice(2), processIo())
// Exit once what was printed is flushed: the demo's abandoned naive work (its
// very point) must not hold the process open.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)))
