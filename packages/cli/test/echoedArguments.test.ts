import { expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// Every argument a message quotes back goes through one printable(): a
// pasted newline or a terminal escape (`\e[2J` clears the screen) must not
// break the line or reach the terminal, and a URL's password is not shown.

it.each([
  [['probe', '\u001b[2Jx'], "hourglass probe: '?[2Jx' is not a URL"],
  [['probe', 'http://127.0.0.1:9/', '--\u001b[2J'], "hourglass probe: unknown option '--?[2J'"],
  [['probe', 'http://user:s3cret@[bad/'], "hourglass probe: 'http://…@[bad/' is not a URL"],
  // A password holding `/`, `?`, `#` or `@`, or a URL with one slash: hidden all the same.
  [['probe', 'http://u:s3/cret@host/'], "hourglass probe: 'http://…@host/' is not a URL"],
  [['probe', 'http://u:s3?cret@host/'], "hourglass probe: 'http://…@host/' is not a URL"],
  [['probe', 'http://u:s3#cret@host/'], "hourglass probe: 'http://…@host/' is not a URL"],
  [['probe', 'http:/u:s3cret@[bad/'], "hourglass probe: 'http:/…@[bad/' is not a URL"],
  [['probe', 'u_x:s3cret@host'], "hourglass probe: '…@host' is not a URL"],
  // Node's own message quotes the argument: taken whole, a newline shown as ?.
  [['demo', 'a\nb'], "hourglass demo: unexpected argument 'a?b' (see"],
  [['probe', 'http://127.0.0.1:9/', '--a\nb'], "hourglass probe: unknown option '--a?b' (see"],
  [['gateway', '--config', 'nope\u001b[2J\n.json'], 'hourglass gateway: nope?[2J?.json: '],
  // What reorders a line in a terminal (a right-to-left override) is shown as ? too.
  [['demo', 'x\u202ey'], "hourglass demo: unexpected argument 'x?y' (see"],
])('hourglass %j: one line, control characters as ?', async (args, start) => {
  const run = await runMain(args)
  expect(run.code).toBe(2)
  expect(run.stderr.startsWith(start)).toBe(true)
  expect(run.stderr).not.toContain('\u001b')
  expect(run.stderr).not.toContain('s3cret')
  expect(run.stderr.split('\n')).toHaveLength(2)
})
