import { readFileSync } from 'node:fs'

/**
 * The version of @hourglass/cli, from its package.json (one directory up
 * from both src/ and dist/), read when asked so other commands pay nothing.
 */
export function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  return String(pkg.version)
}
