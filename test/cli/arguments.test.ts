import { describe, expect, it } from 'vitest'
import { runMain } from './runMain.js'
import { assertBuilt, hourglassBin, runNode } from './runNode.js'

const BAD: [string[], RegExp][] = [
  [[], /^hourglass: missing command/],
  [['frobnicate'], /^hourglass: unknown command 'frobnicate'/],
  [['probe'], /^hourglass probe: missing <url>/],
  [['probe', 'not a url'], /^hourglass probe: 'not a url' is not a URL/],
  [['probe', 'ftp://example.test/'], /^hourglass probe: only http: and https: URLs/],
  [
    ['probe', 'http://127.0.0.1:9/', 'http://127.0.0.1:10/'],
    /^hourglass probe: one <url> expected/,
  ],
  [['probe', 'http://127.0.0.1:9/', '--samples', '0'], /--samples must be a whole number/],
  [['probe', 'http://127.0.0.1:9/', '--warmup', 'three'], /--warmup must be a whole number/],
  [
    ['probe', 'http://127.0.0.1:9/', '--budget'],
    /^hourglass probe: option '--budget <value>' argument missing/,
  ],
  [['probe', 'http://127.0.0.1:9/', '--verbose'], /^hourglass probe: unknown option '--verbose'/],
  // A negative number after an option is its value, judged by the option's own rule
  // (not Node's three-line "argument is ambiguous").
  [
    ['probe', 'http://127.0.0.1:9/', '--budget', '-5'],
    /^hourglass probe: --budget must be a whole number from 1 to \d+, got '-5'\n$/,
  ],
  [
    ['probe', 'http://127.0.0.1:9/', '--budget', '--samples', '3'],
    /^hourglass probe: --budget needs a value; to give one starting with a dash write --budget=<value>/,
  ],
  [
    ['probe', 'http://127.0.0.1:9/', '--header', 'Authorization Bearer sk-secret'],
    /^hourglass probe: --header must be 'name: value', got one without a ':'/,
  ],
  [
    ['probe', 'http://127.0.0.1:9/', '-H', 'x tenant: a'],
    /^hourglass probe: --header name 'x tenant' is not a valid header name\n$/,
  ],
  [
    ['probe', 'http://127.0.0.1:9/', '--header'],
    /^hourglass probe: option '-H, --header <value>' argument missing/,
  ],
  [
    // The README's own example, pasted with its ellipsis character.
    ['probe', 'http://127.0.0.1:9/', '-H', 'authorization: Bearer …'],
    /^hourglass probe: --header 'authorization' has a character a header value cannot carry .*\n$/,
  ],
  [
    ['probe', 'http://127.0.0.1:9/', '-H', 'transfer-encoding: chunked'],
    /^hourglass probe: --header 'transfer-encoding' is the HTTP client's own to send and cannot be given\n$/,
  ],
  [
    ['probe', 'http://%zz@127.0.0.1:9/'],
    /^hourglass probe: the user or password in the URL has a broken %-escape/,
  ],
  [['--json'], /^hourglass: unknown option '--json': name a command first/],
  [
    ['gateway'],
    /^hourglass gateway: --config <file\.json> \(or HOURGLASS_GATEWAY_CONFIG\) is required/,
  ],
  [['gateway', '--config', '/nonexistent/gateway.json'], /\(file\): cannot read it \(ENOENT\)\n$/],
  [
    ['gateway', '--config', 'x.json', '--port', '70000'],
    /--port must be a whole number from 0 to 65535/,
  ],
  [
    ['gateway', '--config', 'x.json', '--port', '-1'],
    /^hourglass gateway: --port must be a whole number from 0 to 65535, got '-1'\n$/,
  ],
  [['demo', 'now'], /^hourglass demo: unexpected argument 'now'/],
  [['demo', '--seed', 'x'], /--seed must be a whole number/],
  // Judged before anything starts: ignored, --json let the demo serve for good.
  [['demo', '--serve', '--json'], /^hourglass demo: --json .*--serve/],
]

function expectOneLine(
  run: { code: number | null; stdout: string; stderr: string },
  message: RegExp,
) {
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr.endsWith('\n')).toBe(true)
  expect(run.stderr.trimEnd().split('\n')).toHaveLength(1)
  expect(run.stderr).toMatch(message)
  expect(run.stderr).not.toContain('sk-secret')
}

describe('bad arguments', () => {
  it.each(BAD)('hourglass %j → one clear line on stderr, exit 2', async (args, message) => {
    expectOneLine(await runMain(args), message)
  })

  it.each([0, 7, 14, 19])(
    'through the bin (case %i): the same line on stderr, exit code 2',
    async (index) => {
      assertBuilt()
      const [args, message] = BAD[index] as [string[], RegExp]
      expectOneLine(await runNode([hourglassBin, ...args], { killAfterMs: 10_000 }), message)
    },
  )
})

describe('--help', () => {
  it.each([[[]], [['demo']], [['probe']], [['gateway']]])(
    'hourglass %j --help prints usage and exits 0',
    async (command) => {
      const run = await runMain([...command, '--help'])
      expect(run.code, run.stderr).toBe(0)
      expect(run.stderr).toBe('')
      expect(run.stdout).toMatch(
        new RegExp(`^Usage: hourglass ${command.length === 0 ? '<command>' : command[0]}`),
      )
      for (const line of run.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(80)
    },
  )
})
