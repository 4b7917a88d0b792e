import { expect, it } from 'vitest'
import type { Io } from '../src/Command.js'
import { main } from '../src/index.js'
import { useGatewayConfig } from './support/gatewayConfig.js'

// `main(argv, io)` with an `io` missing a member (`{ stderr }` from a
// script that only wanted to capture the logs) failed wherever the command
// first wrote to it: `main(['gateway', …], { stderr })` started the gateway,
// listening, then resolved 1 with "hourglass gateway: io.stdout is not a
// function" and left it serving, with nothing to close it. `io` is checked
// with argv now, before any command runs: a TypeError naming the member.

const writeConfig = useGatewayConfig()

it.each<[unknown, string]>([
  [{ stderr: () => {}, stderrIsTTY: false }, 'io.stdout must be a function (text: string) => void'],
  [{ stdout: () => {}, stderrIsTTY: false }, 'io.stderr must be a function (text: string) => void'],
  [
    { stdout: () => {}, stderr: 'log.txt', stderrIsTTY: false },
    'io.stderr must be a function (text: string) => void',
  ],
  // A file descriptor where a function goes: the wrong kind, not a number out of range.
  [
    { stdout: 1, stderr: () => {}, stderrIsTTY: false },
    'io.stdout must be a function (text: string) => void, got 1',
  ],
  [
    { stdout: () => {}, stderr: 2, stderrIsTTY: false },
    'io.stderr must be a function (text: string) => void, got 2',
  ],
  [
    { stdout: () => {}, stderr: () => {}, stderrIsTTY: false, stderrColumns: 80 },
    'io.stderrColumns must be a function returning the width in columns, or undefined',
  ],
  [null, 'io must be an object { stdout, stderr, stderrIsTTY }'],
  // A file descriptor for the whole io: a TypeError too, not a RangeError.
  [1, 'io must be an object { stdout, stderr, stderrIsTTY }, got 1'],
])('io %o is a TypeError naming what is wrong, before any command runs', async (io, message) => {
  await expect(main(['--version'], io as Io)).rejects.toThrow(TypeError)
  await expect(main(['--version'], io as Io)).rejects.toThrow(message)
})

// `main(5)`: the README says anything but an array of strings is a TypeError.
it.each([5, 'probe', [1]])('main(%o) is a TypeError naming argv', async (argv) => {
  await expect(main(argv as unknown as string[])).rejects.toThrow(TypeError)
  await expect(main(argv as unknown as string[])).rejects.toThrow(
    'argv must be an array of strings',
  )
})

it('a gateway is never started for an io it could not report on', async () => {
  const config = writeConfig()
  const before = process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length
  const io = { stderr: () => {}, stderrIsTTY: false } as unknown as Io
  await expect(
    main(['gateway', '--config', config, '--port', '0', '--log-level', 'error'], io),
  ).rejects.toThrow('io.stdout must be a function')
  const after = process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length
  expect(after).toBe(before)
})

// `--help` and `--version` wrote outside the catch that turns a command's
// failure into exit 1: an `io.stdout` that throws (a stream the caller
// closed) rejected main() with the caller's raw error, where the README
// promises exit 1 and its line on `io.stderr`, as for any command.
it.each([['--version'], ['-v'], ['--help'], ['-h'], ['help']])(
  'main([%s]) with an io.stdout that throws: 1, its line on io.stderr',
  async (flag) => {
    const errors: string[] = []
    const io: Io = {
      stdout: () => {
        throw new Error('stream closed by caller')
      },
      stderr: (text) => errors.push(text),
      stderrIsTTY: false,
    }
    await expect(main([flag], io)).resolves.toBe(1)
    expect(errors).toEqual(['hourglass: stream closed by caller\n'])
  },
)
