import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it, onTestFinished } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'
import { runMain } from '../../../test/cli/runMain.js'

// Every argument a message quotes back goes through one printable(): a
// pasted newline or a terminal escape (`\e[2J` clears the screen) must not
// break the line or reach the terminal, and a URL's password is not shown.
// Each such character is shown as its escape (core's escapeId, as `quoted`
// shows a name), so the user sees which one made the argument wrong.

// What must never reach stderr raw, but the line's own end: a control, a
// format character (a bidi override), a line or paragraph separator, half a
// surrogate pair.
const HIDDEN = /(?!\n$)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u

it.each([
  [['probe', '\u001b[2Jx'], String.raw`hourglass probe: '\u001b[2Jx' is not a URL`],
  [
    ['probe', 'http://127.0.0.1:9/', '--\u001b[2J'],
    String.raw`hourglass probe: unknown option '--\u001b[2J'`,
  ],
  [['probe', 'http://user:s3cret@[bad/'], "hourglass probe: 'http://…@[bad/' is not a URL"],
  // A password holding `/`, `?`, `#` or `@`, or a URL with one slash: hidden all the same.
  [['probe', 'http://u:s3/cret@host/'], "hourglass probe: 'http://…@host/' is not a URL"],
  [['probe', 'http://u:s3?cret@host/'], "hourglass probe: 'http://…@host/' is not a URL"],
  [['probe', 'http://u:s3#cret@host/'], "hourglass probe: 'http://…@host/' is not a URL"],
  [['probe', 'http:/u:s3cret@[bad/'], "hourglass probe: 'http:/…@[bad/' is not a URL"],
  [['probe', 'u_x:s3cret@host'], "hourglass probe: '…@host' has no scheme: try http://…@host"],
  // Node's own message quotes the argument: taken whole, a newline shown as \n.
  [['demo', 'a\nb'], String.raw`hourglass demo: unexpected argument 'a\nb' (see`],
  [
    ['probe', 'http://127.0.0.1:9/', '--a\nb'],
    String.raw`hourglass probe: unknown option '--a\nb' (see`,
  ],
  [
    ['gateway', '--config', 'nope\u001b[2J\n.json'],
    String.raw`hourglass gateway: nope\u001b[2J\n.json: `,
  ],
  // parseArgs says no more than `Unknown option '…'` for a command without positionals.
  [['demo', '--a\nb'], String.raw`hourglass demo: unknown option '--a\nb' (see`],
  // What reorders a line in a terminal (a right-to-left override) is escaped too,
  [['demo', 'x\u202ey'], String.raw`hourglass demo: unexpected argument 'x\u202ey' (see`],
  // and a zero-width joiner: an argument is an id, and it is why the id is wrong.
  [['demo', 'x\u200dy'], String.raw`hourglass demo: unexpected argument 'x\u200dy' (see`],
])('hourglass %j: one line, control characters as their escapes', async (args, start) => {
  const run = await runMain(args)
  expect(run.code).toBe(2)
  expect(run.stderr.startsWith(start)).toBe(true)
  expect(run.stderr).not.toMatch(HIDDEN)
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
  expect(run.stderr).toContain(String.raw`environment variable X\u001b[2J\nY is not set`)
  expect(run.stderr).not.toMatch(HIDDEN)
})

const LONG_TARGET = `http://127.0.0.1:1/login?next=${'a'.repeat(300)}`

it.each([
  // A C1 escape in the header (undici reads header bytes as Latin-1): escaped.
  [Buffer.from('http://[x\x9b2J', 'latin1'), String.raw`a redirect to http://[x\u009b2J: probe`],
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
  const redirectLine = run.stderr.split('\n').find((text) => text.includes('a redirect to'))
  expect(redirectLine).toBeDefined()
  expect(redirectLine).not.toMatch(HIDDEN)
})
