import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// A URL's user or password is sent as Basic auth. Its %-escapes were decoded
// as UTF-8 (decodeURIComponent): a well-formed escape of a byte that is no
// UTF-8 on its own — `%E9`, the Latin-1 é a legacy password holds, which
// curl sends as that byte — was refused as "a broken %-escape (write % as
// %25)", and following that advice sent the literal text `%E9` instead.
// Each %XX is now the byte it names; a `%` not followed by two hex digits is
// still a broken escape.

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

it.each([
  [
    'caf%E9',
    'a %-escape that is no UTF-8 on its own (a Latin-1 é)',
    Buffer.from('caf\u00e9', 'latin1'),
  ],
  ['p%C3%A4ss', 'a UTF-8 escape', Buffer.from('päss', 'utf8')],
])(
  'password %s (%s) is sent as the bytes it names, as curl sends them',
  async (escaped, _what, bytes) => {
    server = await faultServer({ type: 'respond', body: 'ok' })
    const url = server.url.replace('http://', `http://user:${escaped}@`)
    const run = await runMain(['probe', url, '--warmup', '0', '--samples', '1'])
    expect(run.code, run.stderr).toBe(0)
    expect(server.records[0]?.headers['authorization']).toBe(
      `Basic ${Buffer.concat([Buffer.from('user:'), bytes]).toString('base64')}`,
    )
    expect(run.stdout + run.stderr).not.toContain(escaped)
  },
)

it.each(['http://%zz@127.0.0.1:9/', 'http://user:100%@127.0.0.1:9/'])(
  '%s: a percent sign not followed by two hex digits is still a broken escape, exit 2',
  async (url) => {
    const run = await runMain(['probe', url])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(
      /^hourglass probe: the user or password in the URL has a broken %-escape/,
    )
  },
)
