import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it, onTestFinished } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'
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
  // parseArgs says no more than `Unknown option '…'` for a command without positionals.
  [['demo', '--a\nb'], "hourglass demo: unknown option '--a?b' (see"],
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

// Quadratic before (a regex backtracking over the slashes): 100,000 took 6 s, a
// million would outlast the test's timeout. Linear now.
it('an invalid URL of a million slashes is refused in one pass', async () => {
  const run = await runMain(['probe', `http:${'/'.repeat(1_000_000)}`])
  expect(run.code).toBe(2)
  expect(run.stderr).toMatch(/^hourglass probe: 'http:\/+…' is not a URL/)
})

it('a config’s { env } name is quoted through printable() too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'gateway.json')
  writeFileSync(
    config,
    JSON.stringify({
      providers: {
        p: { dialect: 'openai', baseURL: { env: 'X\u001b[2J\nY' }, apiKeys: ['k'] },
      },
      models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
    }),
  )
  const run = await runMain(['gateway', '--config', config, '--port', '0'])
  expect(run.code).toBe(2)
  expect(run.stderr).toContain('environment variable X?[2J?Y is not set')
  expect(run.stderr).not.toContain('\u001b')
})

const LONG_TARGET = `http://127.0.0.1:1/login?next=${'a'.repeat(300)}`

it.each([
  // A C1 escape in the header (undici reads header bytes as Latin-1): masked.
  [Buffer.from('http://[x\x9b2J', 'latin1'), 'a redirect to http://[x?2J: probe'],
  // A long target is shown whole: the message says to probe it.
  [LONG_TARGET, `a redirect to ${LONG_TARGET}: probe`],
])('a redirect target is quoted through printable(), not cut (%#)', async (location, line) => {
  const url = await answerRaw(
    Buffer.concat([
      Buffer.from('HTTP/1.1 302 Found\r\nLocation: '),
      Buffer.from(location as string | Buffer),
      Buffer.from('\r\nContent-Length: 0\r\n\r\n'),
    ]),
  )
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stderr).toContain(line)
  expect(run.stderr).not.toMatch(/[\x80-\x9f]/)
})
