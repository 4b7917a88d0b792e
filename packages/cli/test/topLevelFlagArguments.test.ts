import { expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// `hourglass --help probe` printed the list of commands, not probe's options
// (`hourglass help probe` and `hourglass probe --help` did), and
// `hourglass --version probe` printed the version, exit 0, with 'probe'
// dropped in silence. The top-level flags now read what follows them.

it.each([['--help'], ['-h']])(
  "'hourglass %s probe' prints probe's help, as 'help probe' does",
  async (flag) => {
    const run = await runMain([flag, 'probe'])
    expect(run).toEqual(await runMain(['help', 'probe']))
    expect(run.stdout).toMatch(/^Usage: hourglass probe <url>/)
    expect(run.code).toBe(0)
  },
)

it("'hourglass --help nosuch' is refused as 'help nosuch' is: one line, exit 2", async () => {
  const run = await runMain(['--help', 'nosuch'])
  expect(run.stderr).toBe(
    "hourglass help: unknown command 'nosuch': demo, probe or gateway (see hourglass --help)\n",
  )
  expect(run.stdout).toBe('')
  expect(run.code).toBe(2)
})

it.each([['--version'], ['-v']])(
  "'hourglass %s probe' is refused: one line naming what follows, exit 2",
  async (flag) => {
    const run = await runMain([flag, 'probe'])
    expect(run.stderr).toBe(
      `hourglass: ${flag} takes nothing after it, got 'probe' (see hourglass --help)\n`,
    )
    expect(run.stdout).toBe('')
    expect(run.code).toBe(2)
  },
)

it("'hourglass -h -v' prints the main help, exit 0, as before --help read what follows it", async () => {
  const run = await runMain(['-h', '-v'])
  expect(run).toEqual(await runMain(['--help']))
  expect(run.code).toBe(0)
})

it("'hourglass -h -h probe' prints probe's help: nothing after a help flag is dropped", async () => {
  expect(await runMain(['-h', '-h', 'probe'])).toEqual(await runMain(['help', 'probe']))
})

it("'hourglass --help -x' names an unknown option, not a command; control characters shown as their escapes", async () => {
  const run = await runMain(['--help', '-x\u001b[2J'])
  expect(run.stderr).toBe(
    String.raw`hourglass help: unknown option '-x\u001b[2J': demo, probe or gateway (see hourglass --help)` +
      '\n',
  )
  expect(run.stderr).not.toContain('\u001b')
  expect(run.code).toBe(2)
})

it.each([[['help', 'probe', '-h']], [['-h', 'help', 'probe']], [['--help', 'probe', '--help']]])(
  "'hourglass %j' prints probe's help: help asked twice is help asked once",
  async (args) => {
    expect(await runMain(args)).toEqual(await runMain(['help', 'probe']))
  },
)

it('a flood of -h prints the main help, exit 0 (no recursion per flag)', async () => {
  const run = await runMain(Array(20_000).fill('-h'))
  expect(run).toEqual(await runMain(['--help']))
})

it('a long argument is cut whole: never half an emoji', async () => {
  const run = await runMain(['--help', '😀'.repeat(30)])
  expect(run.code).toBe(2)
  expect(run.stderr).not.toMatch(LONE_SURROGATE)
})

/** Half of a surrogate pair without its other half (String#isWellFormed, ES2024). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
