import { messageOf } from '@hourglass/core'
import { type Command, type Io, processIo } from './Command.js'
import { cliVersion } from './cliVersion.js'
import { demoCommand } from './commands/demo.js'
import { gatewayCommand } from './commands/gateway.js'
import { probeCommand } from './commands/probe.js'
import { kindError } from './kindError.js'
import { printable } from './printable.js'
import { isUsageError } from './UsageError.js'

export const commands: readonly Command[] = [demoCommand, probeCommand, gatewayCommand]

export const mainHelp = `Usage: hourglass <command> [options]

One absolute deadline per request, carried across every hop, sliced per step,
and enforced.

Commands:
${commands.map((c) => `  ${c.name.padEnd(9)}${c.summary}`).join('\n')}

Options:
  -h, --help     this help
  -v, --version  print the version

Run 'hourglass help <command>' (or '<command> --help') for its options.
`

/**
 * Run `hourglass …` with `argv` (without node and the script) and return the
 * exit code: 0 done (help and version included), 1 failed, 2 bad arguments
 * (one line on stderr), 3 a gateway whose drain cut requests off. `io`
 * defaults to the process's stdout and stderr, as the `hourglass` binary
 * uses: a script calling `main(['probe', url])` gets the command's output,
 * not a TypeError from inside it.
 */
export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  // Checked here, where the mistake is made: `main('probe')` would otherwise
  // run a command named 'p', and `main()` fail inside with no word of argv.
  if (!Array.isArray(argv) || argv.some((arg) => typeof arg !== 'string')) {
    throw kindError(
      'argv',
      'an array of strings, without node and the script (process.argv.slice(2))',
      argv,
    )
  }
  checkIo(io)
  const [name, ...rest] = argv as string[]
  // `--help probe …` runs `probe --help …`, as `help probe …` does; nothing
  // else may follow `--version`, where it would be dropped in silence.
  let command: Command | undefined
  let args = rest
  if (name === '--help' || name === '-h' || name === 'help') {
    const topic = helpTopic(rest)
    if (typeof topic === 'string') {
      io.stderr(topic)
      return 2
    }
    if (topic.command === undefined) return printed(io, mainHelp)
    command = topic.command
    args = ['--help', ...topic.rest]
  } else if (name === '--version' || name === '-v') {
    if (rest.length > 0) {
      io.stderr(
        `hourglass: ${name} takes nothing after it, got '${printable(rest[0]!)}' (see hourglass --help)\n`,
      )
      return 2
    }
    return printed(io, `${cliVersion()}\n`)
  } else if (name === undefined) {
    io.stderr('hourglass: missing command: demo, probe or gateway (see hourglass --help)\n')
    return 2
  } else {
    command = commands.find((c) => c.name === name)
  }
  if (command === undefined) {
    io.stderr(
      name!.startsWith('-')
        ? `hourglass: unknown option '${printable(name)}': name a command first: demo, probe or gateway (see hourglass --help)\n`
        : isNodePath(name!)
          ? `hourglass: unknown command '${printable(name)}': main() takes argv without node and the script (process.argv.slice(2)), then a command: demo, probe or gateway\n`
          : `hourglass: unknown command '${printable(name)}': demo, probe or gateway (see hourglass --help)\n`,
    )
    return 2
  }
  try {
    return await command.run(args, io)
  } catch (error) {
    if (isUsageError(error)) {
      io.stderr(`${error.message}\n`)
      return 2
    }
    io.stderr(`hourglass ${command.name}: ${messageOf(error).split('\n')[0]}\n`)
    return 1
  }
}

/**
 * `text` on `io.stdout`, exit 0 — or, when stdout throws (a stream the
 * caller closed), exit 1 and its line on `io.stderr`, as a command's own
 * output that stdout could not take is: `--help` and `--version` rejected
 * with the caller's raw error.
 */
function printed(io: Io, text: string): number {
  try {
    io.stdout(text)
    return 0
  } catch (error) {
    io.stderr(`hourglass: ${messageOf(error).split('\n')[0]}\n`)
    return 1
  }
}

/**
 * `io` judged with argv, before any command runs: a member missing or of
 * the wrong kind failed where the command first wrote to it — a gateway
 * already listening, left serving after `main` resolved 1 with
 * "io.stdout is not a function".
 */
function checkIo(io: Io): void {
  if (typeof io !== 'object' || io === null) {
    throw kindError('io', 'an object { stdout, stderr, stderrIsTTY }', io)
  }
  for (const name of ['stdout', 'stderr'] as const) {
    if (typeof io[name] !== 'function') {
      throw kindError(`io.${name}`, 'a function (text: string) => void', io[name])
    }
  }
  if (io.stderrColumns !== undefined && typeof io.stderrColumns !== 'function') {
    throw kindError(
      'io.stderrColumns',
      'a function returning the width in columns, or undefined',
      io.stderrColumns,
    )
  }
}

/**
 * `hourglass help [<command>] …` (and `--help <command> …`): the command's
 * own `--help`, with whatever follows, so the one rule for a help flag
 * (`parseCommandArgs`: an argument next to it is refused) holds however help
 * is asked for. An operator who types `help probe` wants probe's options,
 * not the list of commands again. `undefined`: the top-level help.
 */
function helpTopic(args: string[]): { command?: Command; rest: string[] } | string {
  // Help asked twice is help asked once (`-h -h probe`, `-h help probe`), and
  // before a command, help wins over the version (`-h -v`, `help -v probe`),
  // as it did when help read nothing after it.
  let at = 0
  while (at < args.length && TOP_LEVEL_FLAGS.has(args[at]!)) at++
  const topic = args[at]
  if (topic === undefined) return { rest: [] }
  const command = commands.find((c) => c.name === topic)
  if (command === undefined) {
    return `hourglass help: unknown ${topic.startsWith('-') ? 'option' : 'command'} '${printable(topic)}': demo, probe or gateway (see hourglass --help)\n`
  }
  return { command, rest: args.slice(at + 1) }
}

/**
 * `main(process.argv)`, the commonest mistake calling main from a script,
 * names node's own path as the command: said as it is, with the fix the
 * TypeError for an argv that is no array gives.
 */
function isNodePath(name: string): boolean {
  return name === process.execPath || /[\\/]node(?:\.exe)?$/i.test(name)
}

const TOP_LEVEL_FLAGS = new Set(['-h', '--help', 'help', '-v', '--version'])
