import type { Snippet } from './readmeSnippets.js'

/**
 * The module a README block is checked as: its preamble, its code, then
 * `export {}` so that it is a module even with no import or export (so said
 * `moduleDetection: force` when the blocks had a program of their own;
 * `nodenext` implies it today, but the repo's option is not the blocks' to
 * set). The export comes after the block, so its lines keep their README
 * numbers.
 */
export function snippetModule(snippet: Snippet): string {
  const preamble = snippet.preamble === undefined ? '' : `${snippet.preamble}\n`
  return `${preamble}${snippet.code}\nexport {}\n`
}

/**
 * `README:line`, or `README:line (preamble)`, of a 1-based line of
 * `snippetModule(snippet)`. A line past the block's (the appended export, or
 * the end of the file, where tsc reports a brace the block left open) is the
 * block's last line: the block is what the reader fixes.
 */
export function snippetLocation(snippet: Snippet, fileLine: number): string {
  const line = fileLine - 1 // 0-based in the file
  const preambleLines = snippet.preamble === undefined ? 0 : snippet.preamble.split('\n').length
  if (line < preambleLines) return `${snippet.readme}:${snippet.preambleLine} (preamble)`
  const lastLine = snippet.code.split('\n').length - 1
  return `${snippet.readme}:${snippet.firstLine + Math.min(line - preambleLines, lastLine)}`
}
