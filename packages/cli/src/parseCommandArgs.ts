import { type ParseArgsConfig, parseArgs } from 'node:util'
import { printable } from './printable.js'
import { UsageError } from './UsageError.js'

type Config = Omit<ParseArgsConfig, 'args' | 'strict'>

/**
 * A strict `node:util` `parseArgs` over `args`, its errors turned into
 * one-line `UsageError`s (Node's own messages run to several sentences and
 * lines). An option followed by a negative number (`--budget -5`) takes it as
 * its value, as `--budget=-5` would, so the option's own check names the
 * problem instead of Node's three-line "argument is ambiguous".
 */
export function parseCommandArgs<C extends Config>(
  command: string,
  args: string[],
  config: C,
): ReturnType<typeof parseArgs<C & { args: string[]; strict: true }>> {
  let current = [...args]
  // Each round joins one ambiguous option to its value; there are at most as many as arguments.
  for (let round = 0; ; round++) {
    let parsed: ReturnType<
      typeof parseArgs<C & { args: string[]; strict: true; tokens: true; allowPositionals: true }>
    >
    try {
      // Positionals are always read, and refused below: one rule for a help
      // flag next to them, whether or not the command takes any.
      parsed = parseArgs({
        ...config,
        args: current,
        strict: true as const,
        tokens: true as const,
        allowPositionals: true,
      })
    } catch (error) {
      const joined = round < args.length ? joinNegativeValue(current, error) : undefined
      if (joined) {
        current = joined
        continue
      }
      throw new UsageError(
        `hourglass ${command}: ${describe(error)} (see hourglass ${command} --help)`,
        { cause: error },
      )
    }
    refuseRepeats(command, config, parsed.tokens as readonly OptionToken[] | undefined)
    refuseStrayPositionals(command, config, parsed.positionals, parsed.values)
    const { tokens: _, ...result } = parsed
    return result as ReturnType<typeof parseArgs<C & { args: string[]; strict: true }>>
  }
}

/** The part of `parseArgs`'s tokens read here (its own types narrow poorly through generics). */
interface OptionToken {
  kind: string
  name?: string
  value?: string | undefined
}

/**
 * An option that takes one value, given twice, is a bad argument: Node keeps
 * the last one without a word, so `--config prod.json … --config
 * staging.json` served staging, and whichever came last decided silently.
 * On/off options and repeatable ones (`-H`) may repeat.
 */
function refuseRepeats(
  command: string,
  config: Config,
  tokens: readonly OptionToken[] | undefined,
): void {
  const seen = new Map<string, string>()
  for (const token of tokens ?? []) {
    if (token.kind !== 'option' || token.name === undefined) continue
    const option = config.options?.[token.name]
    if (option?.type !== 'string' || option.multiple) continue
    // Quoted as the other argument messages quote: one line, not a pasted file.
    const value = printable(token.value ?? '', 64)
    const earlier = seen.get(token.name)
    if (earlier !== undefined) {
      throw new UsageError(
        `hourglass ${command}: --${token.name} given twice ('${earlier}', then '${value}'): give it once (see hourglass ${command} --help)`,
      )
    }
    seen.set(token.name, value)
  }
}

/**
 * With a help flag, any argument is refused, in every command: the help is
 * the same whatever follows, so `probe -h x y` printing it (exit 0) while
 * `demo --help x` failed (exit 2) told a script nothing either way. Options
 * the command knows may come with the flag (their values unread). Without
 * one, a command that takes no arguments refuses the first, as Node would.
 */
function refuseStrayPositionals(
  command: string,
  config: Config,
  positionals: readonly string[],
  values: Record<string, unknown>,
): void {
  const [first] = positionals
  if (first === undefined) return
  if (values['help'] === true) {
    throw new UsageError(
      `hourglass ${command}: help takes no arguments, got '${printable(first, 64)}' (run hourglass ${command} --help)`,
    )
  }
  if (!config.allowPositionals) {
    throw new UsageError(
      `hourglass ${command}: unexpected argument '${printable(first, 64)}' (see hourglass ${command} --help)`,
    )
  }
}

const NEGATIVE = /^-\d|^-\.\d/

/** `[…, '--budget', '-5', …]` → `[…, '--budget=-5', …]` when Node found that option ambiguous. */
function joinNegativeValue(args: string[], error: unknown): string[] | undefined {
  const message = error instanceof Error ? error.message : ''
  const option = /^Option '(-{1,2}[^\s']+)(?: <value>)?' argument is ambiguous/.exec(message)?.[1]
  if (option === undefined) return undefined
  // The occurrence Node stopped at: the one a negative number follows (an
  // option given twice may have a plain value first).
  const at = args.findIndex((arg, i) => arg === option && NEGATIVE.test(args[i + 1] ?? ''))
  if (at < 0) return undefined
  const value = args[at + 1]!
  const together = option.startsWith('--') ? `${option}=${value}` : `${option}${value}`
  return [...args.slice(0, at), together, ...args.slice(at + 2)]
}

/** Node's message, cut to its first sentence of its first line, in our voice. */
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const ambiguous = /^Option '(-{1,2}[^\s']+)(?: <value>)?' argument is ambiguous/.exec(message)
  if (ambiguous) {
    const long = /use '(--[^=']+)=/.exec(message)?.[1] ?? ambiguous[1]!
    return `${ambiguous[1]} needs a value; to give one starting with a dash write ${long}=<value>`
  }
  // Node quotes the argument as given (`Unknown option '--…'. To specify…`):
  // taken whole, before its wording is cut, and quoted on one line.
  const quoted = /^(Unknown option|Unexpected argument) '([\s\S]*?)'(?:\. |$)/.exec(message)
  if (quoted) return `${quoted[1]!.toLowerCase()} '${printable(quoted[2]!, 64)}'`
  const first = message.split('\n')[0]!.split('. ')[0]!.replace(/\.$/, '')
  return printable(`${first.charAt(0).toLowerCase()}${first.slice(1)}`, 200)
}

/** A whole number option within [min, max], blanks around it ignored, or a UsageError naming it. */
export function intOption(
  command: string,
  name: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max = 2_147_483_647,
): number {
  if (value === undefined) return fallback
  // Trimmed, as the environment variables (PORT) and --log-level are:
  // `--port " 80"` from a quoted variable is the 80 that PORT=" 80" is.
  const n = /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `hourglass ${command}: --${name} must be a whole number from ${min} to ${max}, got '${printable(value)}'`,
    )
  }
  return n
}
