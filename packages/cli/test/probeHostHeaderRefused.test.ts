import { readFileSync } from 'node:fs'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'
import { parseHeader } from '../src/probe/parseHeader.js'
import { UsageError } from '../src/UsageError.js'

// `hourglass probe http://10.0.0.5/ -H 'Host: api.example.com'` (curl's way to
// reach one virtual host by address) exited 0 with figures, but fetch deletes
// a caller's Host (and Content-Length) before sending: the probe timed the
// default virtual host while saying it sent the header on every call. It now
// refuses such a header as a bad argument, before any call, and says why.

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

it.each([
  [
    'Host: api.example.com',
    /^hourglass probe: --header 'Host' cannot be sent: fetch sets Host from the URL/,
  ],
  [
    'content-length: 3',
    /^hourglass probe: --header 'content-length' cannot be sent: fetch sets it/,
  ],
])("-H '%s' is refused (exit 2, one line) and no call is made", async (header, line) => {
  server = await faultServer({ type: 'respond', body: 'ok' })
  const run = await runMain(['probe', server.url, '--warmup', '0', '--samples', '1', '-H', header])
  expect(run.code).toBe(2)
  expect(run.stderr).toMatch(line)
  expect(run.stderr.trim().split('\n')).toHaveLength(1)
  expect(run.stdout).toBe('')
  expect(server.records).toHaveLength(0)
})

// The README's `-H` row named Host and Content-Length as the headers refused;
// the ones that frame the connection or the message were refused as well
// (exit 2) without a word there.
it.each(['Host', 'Content-Length', 'Transfer-Encoding', 'Upgrade', 'Expect', 'Keep-Alive'])(
  "-H '%s: …' is refused as a usage error, and the README's -H row says so",
  (name) => {
    expect(() => parseHeader(`${name}: x`)).toThrow(UsageError)
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const row = readme.split('\n').find((l) => l.startsWith('| `-H`'))
    expect(row).toContain(`\`${name}\``)
  },
)

// undici sends only `close` or `keep-alive`: `Connection: upgrade` went out
// as `keep-alive`, and the probe said it sent the header on every call.
it('-H Connection takes close or keep-alive (any case); anything else is a usage error naming them', () => {
  expect(parseHeader('Connection: close')).toEqual(['Connection', 'close'])
  expect(parseHeader('connection: Keep-Alive')).toEqual(['connection', 'Keep-Alive'])
  for (const value of ['upgrade', 'foo', 'keep-alive, upgrade']) {
    expect(() => parseHeader(`Connection: ${value}`)).toThrow(
      new UsageError(
        "hourglass probe: --header 'Connection' can only be 'close' or 'keep-alive' (the HTTP client sends no other)",
      ),
    )
  }
})
