import { expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// Three URLs a user mistypes were refused naming the wrong thing:
// `http//host/` (the colon left out) was offered `http://http//host/`;
// `user:pw@host:8080` (no scheme, credentials) was told "only http: and
// https: … got 'user:'", a scheme never written, the user name echoed; a
// port over 65535 read only "is not a URL". Each is now named for what it
// is, the URL to try offered, and credentials shown as `…`. Still bad
// arguments (exit 2): nothing is called.

const NOTE = '… stands for the credentials, never printed'

it.each([
  [
    'http//127.0.0.1:8080/items',
    "'http//127.0.0.1:8080/items' lacks the ':' after http: try http://127.0.0.1:8080/items",
  ],
  [
    'HTTPS//api.example.test',
    "'HTTPS//api.example.test' lacks the ':' after HTTPS: try https://api.example.test",
  ],
  [
    'http//u:s3cret@host/x',
    `'http//…@host/x' lacks the ':' after http: try http://…@host/x (${NOTE})`,
  ],
  [
    'user:s3cret@127.0.0.1:8080',
    `'…@127.0.0.1:8080' has no scheme: try http://…@127.0.0.1:8080 (or https://; ${NOTE})`,
  ],
  [
    'user:s3cret@api.internal/items',
    `'…@api.internal/items' has no scheme: try http://…@api.internal/items (or https://; ${NOTE})`,
  ],
  ['u_x:s3cret@host', `'…@host' has no scheme: try http://…@host (or https://; ${NOTE})`],
  // A host with `_` (not a DNS name, one people type): the user was echoed as a scheme.
  [
    'admin:s3cret@my_host',
    `'…@my_host' has no scheme: try http://…@my_host (or https://; ${NOTE})`,
  ],
  [
    'http://127.0.0.1:70000/',
    "'http://127.0.0.1:70000/' has port 70000, out of range (a port is 1 to 65535)",
  ],
  [
    'https://u:s3cret@[::1]:65536/x',
    "'https://…@[::1]:65536/x' has port 65536, out of range (a port is 1 to 65535)",
  ],
])("'%s' is refused as: %s (exit 2)", async (given, line) => {
  const run = await runMain(['probe', given])
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr).toBe(`hourglass probe: ${line}\n`)
  expect(run.stderr).not.toContain('s3cret')
  expect(run.stderr).not.toContain('user')
})

// An `@` past the host may end a password that holds a `/`: nothing offered,
// and the text quoted with everything up to its last `@` hidden.
it.each([
  ['u:/s3cret@host/', "only http: and https: URLs can be probed, got 'u:'"],
  ['http:/u:s3cret@[bad/', "'http:/…@[bad/' is not a URL"],
  ['host:8080/s3cret@x', "only http: and https: URLs can be probed, got 'host:'"],
])("'%s' is offered no URL, and shows no password", async (given, start) => {
  const run = await runMain(['probe', given])
  expect(run.code).toBe(2)
  expect(run.stderr.startsWith(`hourglass probe: ${start}`), run.stderr).toBe(true)
  expect(run.stderr).not.toContain('s3cret')
})

it("a real scheme with a user in it keeps its own message: 'mailto:ops@example.test'", async () => {
  const run = await runMain(['probe', 'mailto:ops@example.test'])
  expect(run.code).toBe(2)
  expect(run.stderr).toBe(
    "hourglass probe: only http: and https: URLs can be probed, got 'mailto:'\n",
  )
})

// `user:s3cret@host` (no scheme, no port, no path) read as the scheme
// `user:`: "only http: and https: … got 'user:'", the user name echoed and a
// scheme never written named. It is a user and password with the scheme
// left out, as `user:s3cret@host:8080` is; schemes written `scheme:user@host`
// (mailto:, xmpp:, sip:…) keep their own message.
it.each([
  ['user:s3cret@api.internal', `'…@api.internal' has no scheme: try http://…@api.internal`],
  ['user:s3cret@127.0.0.1', `'…@127.0.0.1' has no scheme: try http://…@127.0.0.1`],
  ['user:s3cret@[::1]', `'…@[::1]' has no scheme: try http://…@[::1]`],
])("'%s' is refused as: %s (exit 2)", async (given, line) => {
  const run = await runMain(['probe', given])
  expect(run.code).toBe(2)
  expect(run.stderr).toBe(`hourglass probe: ${line} (or https://; ${NOTE})\n`)
  expect(run.stderr).not.toContain('s3cret')
  expect(run.stderr).not.toContain('user')
})

it.each(['xmpp:ops@example.test', 'sip:alice@atlanta.example.test'])(
  "'%s', a scheme written with a user and no //, keeps its own message",
  async (given) => {
    const run = await runMain(['probe', given])
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      `hourglass probe: only http: and https: URLs can be probed, got '${given.slice(0, given.indexOf(':') + 1)}'\n`,
    )
  },
)

// Port 0 passed the URL parser and failed only at fetch time, after the
// probe had begun: "cannot connect to 127.0.0.1:0 (ECONNREFUSED …)", exit 1,
// where port 70000 is refused up front. Refused as that one is.
it.each([
  ['http://127.0.0.1:0/', "'http://127.0.0.1:0/' has port 0"],
  ['https://u:s3cret@[::1]:0/x', "'https://…@[::1]:0/x' has port 0"],
  ['http://h:00/', "'http://h:00/' has port 0"],
])("'%s' is refused up front: %s, out of range (exit 2)", async (given, start) => {
  const run = await runMain(['probe', given, '--warmup', '0', '--samples', '1'])
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr).toBe(`hourglass probe: ${start}, out of range (a port is 1 to 65535)\n`)
})

// More than one argument that is no option read "one <url> expected, got 3",
// naming neither the stray one nor the likeliest cause: a header the shell
// split at its blanks (`-H authorization: Bearer $TOKEN`, unquoted). That
// header is named, with the fix, and its words — a credential — are not
// printed; otherwise the stray argument is quoted, a password in it hidden.
it.each([
  [
    ['http://127.0.0.1:9/', '-H', 'authorization:', 'Bearer', 's3cret'],
    "one <url> expected, got 3, and --header 'authorization:' has no value: the shell split the header at its blanks; quote it whole: -H 'authorization: …'",
  ],
  [
    ['-H', 'x-api-key:', 's3cret', 'http://127.0.0.1:9/'],
    "one <url> expected, got 2, and --header 'x-api-key:' has no value: the shell split the header at its blanks; quote it whole: -H 'x-api-key: …'",
  ],
  // Split elsewhere than after the colon: no word of the value quoted back.
  ...[
    ['http://127.0.0.1:9/', '-H', 'authorization:Bearer', 's3cret'],
    ['http://127.0.0.1:9/', '-H', 'authorization: Bearer', 's3cret'],
    ['http://127.0.0.1:9/', '--header', 'authorization: Basic', 's3cret'],
    ['http://127.0.0.1:9/', '--header=x-api-key:abc', 's3cret'],
    ['-H', 'x-api-key: abc', 's3cret', 'http://127.0.0.1:9/'],
  ].map((args) => [
    args,
    "one <url> expected, got 2: if a --header value has blanks, the shell split it; quote it whole: -H 'name: value' (see hourglass probe --help)",
  ]),
  [
    ['http://127.0.0.1:9/', 'extra'],
    "one <url> expected, got 2: unexpected argument 'extra' (see hourglass probe --help)",
  ],
  [
    ['items', 'http://u:s3cret@127.0.0.1:9/'],
    "one <url> expected, got 2: unexpected argument 'items' (see hourglass probe --help)",
  ],
  [
    ['http://127.0.0.1:9/', 'http://u:s3cret@127.0.0.1:10/'],
    "one <url> expected, got 2: unexpected argument 'http://…@127.0.0.1:10/' (see hourglass probe --help)",
  ],
])('probe %j: %s (exit 2)', async (args, message) => {
  const run = await runMain(['probe', ...args])
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr).toBe(`hourglass probe: ${message}\n`)
  expect(run.stderr).not.toContain('s3cret')
})
