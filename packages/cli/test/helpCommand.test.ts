import { expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// `hourglass help probe` printed the list of commands again, whatever came
// after `help`: an operator asking for probe's options never saw them. main()
// runs in this process, as test/cli's do.

it.each(['probe', 'gateway', 'demo'])(
  "'help %s' prints what '<command> --help' prints, on stdout, exit 0",
  async (name) => {
    const viaFlag = await runMain([name, '--help'])
    const viaHelp = await runMain(['help', name])
    expect(viaFlag.code).toBe(0)
    expect(viaHelp).toEqual(viaFlag)
    expect(viaHelp.stdout).toContain(`Usage: hourglass ${name}`)
  },
)

it("'help' alone prints the top-level help, as --help does", async () => {
  const viaHelp = await runMain(['help'])
  expect(viaHelp).toEqual(await runMain(['--help']))
  expect(viaHelp.stdout).toContain('Usage: hourglass <command> [options]')
})

it("'help <unknown>' is one line on stderr naming it, exit 2, nothing on stdout", async () => {
  const run = await runMain(['help', 'nosuch'])
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr).toBe(
    "hourglass help: unknown command 'nosuch': demo, probe or gateway (see hourglass --help)\n",
  )
})

it("'help probe extra' is refused in one line, exit 2", async () => {
  const run = await runMain(['help', 'probe', 'extra'])
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr.split('\n')).toEqual([expect.stringContaining("'extra'"), ''])
})
