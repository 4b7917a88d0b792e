import { describe, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// One rule for a help flag, in every command and every way of asking: an
// argument next to it is refused (exit 2, one line naming it), never dropped
// in silence. Before, `probe -h x y` printed the help (exit 0) while `demo
// --help x` was refused (exit 2), and `help -v probe` called the top-level
// `-v` an unknown option. Options a command knows may come with the flag:
// the help is printed, their values unread.

const commands = ['probe', 'gateway', 'demo'] as const

describe.each(commands)('hourglass %s', (name) => {
  const refused = {
    code: 2,
    stdout: '',
    stderr: `hourglass ${name}: help takes no arguments, got 'x' (run hourglass ${name} --help)\n`,
  }

  it.each([
    [[name, '--help', 'x']],
    [[name, '-h', 'x']],
    [[name, 'x', '--help']],
    [[name, '-h', 'x', 'y']],
    [['help', name, 'x']],
    [['--help', name, 'x']],
    [['-h', name, 'x', '-h']],
  ])('%j is refused: one line naming the argument, exit 2', async (argv) => {
    expect(await runMain(argv)).toEqual(refused)
  })

  it.each([[['help', '-v', name]], [['-h', '--version', name]], [[name, '-h', '-h']]])(
    "%j prints the command's help, exit 0",
    async (argv) => {
      const help = await runMain([name, '--help'])
      expect(help.code).toBe(0)
      expect(help.stdout).toContain(`Usage: hourglass ${name}`)
      expect(await runMain(argv)).toEqual(help)
    },
  )
})

it.each([
  ['probe', '--json'],
  ['demo', '--json'],
  ['gateway', '--port=1'],
])(
  '%s --help %s: a known option with the flag still prints the help, exit 0',
  async (name, option) => {
    const run = await runMain([name, '--help', option])
    expect(run).toEqual(await runMain([name, '--help']))
    expect(run.code).toBe(0)
  },
)
