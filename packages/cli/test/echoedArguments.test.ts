import { expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// Every argument a message quotes back goes through one printable(): a
// pasted newline or a terminal escape (`\e[2J` clears the screen) must not
// break the line or reach the terminal, and a URL's password is not shown.

it.each([
  [['probe', '\u001b[2Jx'], "hourglass probe: '?[2Jx' is not a URL"],
  [['probe', 'http://127.0.0.1:9/', '--\u001b[2J'], "hourglass probe: unknown option '--?[2J'"],
  [['probe', 'http://user:s3cret@[bad/'], "hourglass probe: 'http://…@[bad/' is not a URL"],
])('hourglass %j: one line, control characters as ?', async (args, start) => {
  const run = await runMain(args)
  expect(run.code).toBe(2)
  expect(run.stderr.startsWith(start)).toBe(true)
  expect(run.stderr).not.toContain('\u001b')
  expect(run.stderr).not.toContain('s3cret')
  expect(run.stderr.split('\n')).toHaveLength(2)
})
