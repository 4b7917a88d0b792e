import { expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// `hourglass probe localhost:8080/items` — a URL typed as curl takes it,
// without its scheme — was refused with "only http: and https: URLs can be
// probed, got 'localhost:'": the host read as a scheme, and the operator
// told of a scheme they never wrote. `127.0.0.1:8080/items` got "is not a
// URL (try http://host:port/path)". Both now say what is missing, with the
// URL to try. Still a bad argument (exit 2): which scheme is the caller's
// to say, and nothing is called.

it.each([
  ['localhost:8080/items', 'http://localhost:8080/items'],
  ['api.internal:8443', 'http://api.internal:8443'],
  ['127.0.0.1:8080/items?id=4', 'http://127.0.0.1:8080/items?id=4'],
  ['inventory.internal/items/42', 'http://inventory.internal/items/42'],
])("'%s' is refused naming the missing scheme, with %s to try (exit 2)", async (given, fixed) => {
  const run = await runMain(['probe', given])
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr).toBe(`hourglass probe: '${given}' has no scheme: try ${fixed} (or https://)\n`)
})

it.each([
  // A scheme written out is judged as one.
  [
    'ftp://example.test/',
    "hourglass probe: only http: and https: URLs can be probed, got 'ftp:'\n",
  ],
  [
    'mailto:ops@example.test',
    "hourglass probe: only http: and https: URLs can be probed, got 'mailto:'\n",
  ],
  ['not a url', "hourglass probe: 'not a url' is not a URL (try http://host:port/path)\n"],
])("'%s' keeps its own message", async (given, line) => {
  const run = await runMain(['probe', given])
  expect(run.code).toBe(2)
  expect(run.stderr).toBe(line)
})
