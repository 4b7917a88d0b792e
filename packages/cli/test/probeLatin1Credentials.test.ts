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

it('a %-escape in the password that is no UTF-8 (%E9) is sent as its byte, as curl sends it', async () => {
  server = await faultServer({ type: 'respond', body: 'ok' })
  const url = server.url.replace('http://', 'http://user:caf%E9@')
  const run = await runMain(['probe', url, '--warmup', '0', '--samples', '1'])
  expect(run.code, run.stderr).toBe(0)
  expect(server.records[0]!.headers['authorization']).toBe(
    `Basic ${Buffer.from('user:caf\u00e9', 'latin1').toString('base64')}`,
  )
  expect(run.stdout + run.stderr).not.toContain('%E9')
})

it('a UTF-8 password still goes out as UTF-8', async () => {
  server = await faultServer({ type: 'respond', body: 'ok' })
  const url = server.url.replace('http://', 'http://user:p%C3%A4ss@')
  const run = await runMain(['probe', url, '--warmup', '0', '--samples', '1'])
  expect(run.code, run.stderr).toBe(0)
  expect(server.records[0]!.headers['authorization']).toBe(
    `Basic ${Buffer.from('user:päss', 'utf8').toString('base64')}`,
  )
})

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
