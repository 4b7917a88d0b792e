import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { commands } from '../src/index.js'

// The README's options table for each command and the command's --help name
// the same flags and environment variables: an operator reads one or the
// other, and a flag only one of them shows is one they cannot find (or one
// that no longer exists).

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

/** The text of the README section `### \`hourglass <name> …\``, up to the next heading. */
function section(name: string): string {
  const start = readme.search(new RegExp(`^### \`hourglass ${name}\\b`, 'm'))
  if (start < 0) throw new Error(`README has no section for hourglass ${name}`)
  const rest = readme.slice(readme.indexOf('\n', start) + 1)
  const end = rest.search(/^#{1,3} /m)
  return end < 0 ? rest : rest.slice(0, end)
}

/** Flags (`--x`, `-H`) and environment variables (`PORT`) named in a section's table rows. */
function tableNames(text: string): { flags: Set<string>; env: Set<string> } {
  const flags = new Set<string>()
  const env = new Set<string>()
  for (const line of text.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*-/.test(line)) continue
    const [first = '', second = ''] = line.split('|').slice(1)
    for (const m of first.matchAll(/`(--?[a-zA-Z][\w-]*)/g)) flags.add(m[1]!)
    for (const m of second.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) env.add(m[1]!)
  }
  return { flags, env }
}

it.each(['probe', 'gateway', 'demo'])(
  'hourglass %s: the README table and --help name the same flags and variables',
  (name) => {
    const command = commands.find((c) => c.name === name)
    if (!command) throw new Error(`no command ${name}`)
    const { flags, env } = tableNames(section(name))
    const helpFlags = new Set(
      [...command.help.matchAll(/(?:^|[\s,[])(--?[a-zA-Z][\w-]*)/gm)]
        .map((m) => m[1]!)
        .filter((f) => f !== '-h' && f !== '--help'),
    )
    // Every option line of --help ("  --port <n>", "  -H, --header <h>").
    const optionLines = command.help.split('Options:')[1] ?? ''
    const helpOptions = new Set(
      [...optionLines.matchAll(/^ {2}(?:(-\w), )?(--[\w-]+)/gm)]
        .flatMap((m) => [m[1], m[2]])
        .filter((f): f is string => f !== undefined && f !== '-h' && f !== '--help'),
    )
    expect(flags.size).toBeGreaterThan(0)
    expect(
      [...flags].filter((f) => !helpFlags.has(f)),
      'in the README, not in --help',
    ).toEqual([])
    expect(
      [...helpOptions].filter((f) => !flags.has(f)),
      'in --help, not in the README',
    ).toEqual([])
    expect(
      [...env].filter((v) => !command.help.includes(v)),
      'variables not in --help',
    ).toEqual([])
  },
)
