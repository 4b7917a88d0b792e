import { expect, it } from 'vitest'
import { answerRaw, probeOnce } from '../../../test/cli/answerRaw.js'

// A redirect's Location is the server's to fill: one with a user name and
// password (an SSO hop, a proxy naming its upstream) must not put the
// password on stderr, which CI logs keep. The target is still named, its
// query too (the message says to probe it), its credentials shown as `…`,
// as an argument's are.
it.each([
  [
    'https://svc:Pa55w0rd-7f3c2e91b0@login.example/sso',
    'a redirect to https://…@login.example/sso: probe',
  ],
  [
    'https://svc:Pa55@w0rd-7f3c2e91b0@login.example/sso?next=/a',
    'a redirect to https://…@login.example/sso?next=/a: probe',
  ],
  ['http://svc:Pa55w0rd-7f3c2e91b0@[bad/', 'a redirect to http://…@[bad/: probe'],
  ['//svc:Pa55w0rd-7f3c2e91b0@[bad/', 'a redirect to //…@[bad/: probe'],
  ['http:///svc:Pa55w0rd-7f3c2e91b0@[bad/', 'a redirect to http:///…@[bad/: probe'],
  ['https:svc:Pa55w0rd-7f3c2e91b0@[bad/', 'a redirect to https:…@[bad/: probe'],
  ['ht\ttp://svc:Pa55w0rd-7f3c2e91b0@[bad/', 'a redirect to http://…@[bad/: probe'],
])('a redirect to %s is named without its password', async (location, line) => {
  const url = await answerRaw(
    `HTTP/1.1 302 Found\r\nLocation: ${location}\r\nContent-Length: 0\r\n\r\n`,
  )
  const run = await probeOnce(url)
  expect(run.code).toBe(1)
  expect(run.stderr).toContain(line)
  expect(run.stderr).not.toContain('w0rd-7f3c2e91b0')
})
