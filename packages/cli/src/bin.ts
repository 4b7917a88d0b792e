#!/usr/bin/env node
import { processIo } from './Command.js'
import { main } from './main.js'

const code = await main(process.argv.slice(2), processIo())
// Exit once what was printed is flushed: the demo's abandoned naive work (its
// very point) must not hold the process open.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)))
