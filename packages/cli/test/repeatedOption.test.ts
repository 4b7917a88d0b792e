import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'
import { assertBuilt, hourglassBin, runNode } from '../../../test/cli/runNode.js'
import { printable } from '../src/printable.js'

// `hourglass gateway --config prod.json --port 8080 … --config staging.json`
// served staging.json: an option that takes one value, given twice, kept the
// last one without a word, so the operator's mistake (or an appended default
// in a script) decided silently what ran. It is a bad argument now, named.

const dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-'))
const config = join(dir, 'gateway.json')
writeFileSync(
  config,
  JSON.stringify({
    providers: { fake: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
    models: { small: { fallback: [{ provider: 'fake', model: 'm' }] } },
  }),
)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

it.each([
  [
    ['gateway', '--config', config, '--port', '1', '--port', '2'],
    "hourglass gateway: --port given twice ('1', then '2'): give it once (see hourglass gateway --help)\n",
  ],
  [
    ['gateway', '--config', '/nonexistent/a.json', '--config', config],
    "hourglass gateway: --config given twice ('/nonexistent/a.json', then '" +
      // Quoted as every echoed argument is (a long TMPDIR's path is cut).
      printable(config, 64) +
      "'): give it once (see hourglass gateway --help)\n",
  ],
  [
    ['probe', 'http://127.0.0.1:9/', '--budget', '-5', '--budget=300'],
    "hourglass probe: --budget given twice ('-5', then '300'): give it once (see hourglass probe --help)\n",
  ],
  [
    // The second negative: still named as given twice, not as a value-less option.
    ['probe', 'http://127.0.0.1:9/', '--budget', '300', '--budget', '-5'],
    "hourglass probe: --budget given twice ('300', then '-5'): give it once (see hourglass probe --help)\n",
  ],
  [
    // Echoed on one line: a pasted newline or a terminal escape is shown as its escape.
    ['demo', '--seed', '1\n\u001b[2J', '--seed', '2'],
    String.raw`hourglass demo: --seed given twice ('1\n\u001b[2J', then '2'): give it once (see hourglass demo --help)` +
      '\n',
  ],
  [
    ['demo', '--seed', '7', '--seed', '7'],
    "hourglass demo: --seed given twice ('7', then '7'): give it once (see hourglass demo --help)\n",
  ],
])(
  'hourglass %j: an option that takes one value, given twice, is refused (exit 2, one line)',
  async (args, line) => {
    const run = await runMain(args)
    expect(run.stderr).toBe(line)
    expect(run.stdout).toBe('')
    expect(run.code).toBe(2)
  },
)

it('repeatable and on/off options may still repeat: -H twice, --json twice', async () => {
  // Judged before any call: the missing URL is the only problem named.
  const run = await runMain(['probe', '-H', 'a: 1', '-H', 'b: 2', '--json', '--json'])
  expect(run.stderr).toBe('hourglass probe: missing <url> (see hourglass probe --help)\n')
  expect(run.code).toBe(2)
})

it('through the bin: the gateway given --port twice does not start; one line, exit 2', async () => {
  assertBuilt()
  const run = await runNode(
    [hourglassBin, 'gateway', '--config', config, '--port', '0', '--port', '0'],
    { killAfterMs: 10_000 },
  )
  expect(run.stdout).toBe('')
  expect(run.stderr).toBe(
    "hourglass gateway: --port given twice ('0', then '0'): give it once (see hourglass gateway --help)\n",
  )
  expect({ code: run.code, signal: run.signal }).toEqual({ code: 2, signal: null })
})
