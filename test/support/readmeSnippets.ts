import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { docPaths } from './docPaths.js'
import { tsBlocks } from './tsBlocks.js'

// Every ```ts / ```typescript block in the root README, each package's
// README and each package's reference pages (packages/*/docs/*.md), with the
// HTML comments placed right before its fence (invisible on GitHub):
//
//   <!-- snippet-preamble: import express from 'express'; const app = express() -->
//   <!-- snippet: skip (pseudo-code: the shape of a report, not code) -->
//
// The preamble is prepended to the block when it is checked; skip leaves the
// block out and must give a reason. docs/readmeSnippets.test.ts checks the
// comments, typecheck.test.ts type-checks the blocks. See test/README.md.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

export interface Snippet {
  /** README path relative to the repo root. */
  readme: string
  /** 1-based README line of the block's first code line. */
  firstLine: number
  /** 1-based README line of the preamble comment, if any. */
  preambleLine: number | undefined
  preamble: string | undefined
  code: string
  skip: string | undefined
}

function readmePaths(): string[] {
  const packages = readdirSync(path.join(repoRoot, 'packages'))
    .map((name) => path.join('packages', name, 'README.md'))
    .filter((file) => existsSync(path.join(repoRoot, file)))
  return ['README.md', ...packages.sort(), ...docPaths()]
}

const DIRECTIVE = /^<!--\s*snippet(-preamble)?\s*:\s*([\s\S]*?)\s*-->$/

/** The `<!-- snippet… -->` comments ending on the line right before `fence` (0-based). */
function directivesBefore(
  lines: string[],
  fence: number,
  readme: string,
  used: Set<number>,
): { preamble?: { text: string; line: number }; skip?: string } {
  const found: { preamble?: { text: string; line: number }; skip?: string } = {}
  let end = fence - 1
  while (end >= 0 && (lines[end] ?? '').trim().endsWith('-->')) {
    let start = end
    while (start > 0 && !(lines[start] ?? '').trimStart().startsWith('<!--')) start--
    const comment = lines
      .slice(start, end + 1)
      .join('\n')
      .trim()
    const match = DIRECTIVE.exec(comment)
    if (!match) break
    used.add(start)
    const [, isPreamble, body = ''] = match
    if (isPreamble) {
      found.preamble = { text: body, line: start + 1 }
    } else {
      const skip = /^skip\s*\((.+)\)$/s.exec(body)
      if (!skip?.[1]?.trim()) {
        throw new Error(
          `${readme}:${start + 1}: unknown snippet directive "${body}" (expected "snippet: skip (reason)" or "snippet-preamble: …")`,
        )
      }
      found.skip = skip[1].trim()
    }
    end = start - 1
  }
  return found
}

/**
 * The ts blocks of every README and reference page, in order, and the
 * `<!-- snippet… -->` comments (README:line) that are not right before one.
 * Throws on a directive it does not know, naming its README:line.
 */
export function readmeSnippets(): { snippets: Snippet[]; strayDirectives: string[] } {
  const snippets: Snippet[] = []
  const strayDirectives: string[] = []
  for (const readme of readmePaths()) {
    const lines = readFileSync(path.join(repoRoot, readme), 'utf8').split(/\r?\n/)
    const used = new Set<number>()
    for (const block of tsBlocks(lines)) {
      const { preamble, skip } = directivesBefore(lines, block.fence, readme, used)
      snippets.push({
        readme,
        firstLine: block.firstLine,
        preambleLine: preamble?.line,
        preamble: preamble?.text,
        code: block.code,
        skip,
      })
    }
    lines.forEach((line, n) => {
      if (/^\s*<!--\s*snippet/.test(line) && !used.has(n))
        strayDirectives.push(`${readme}:${n + 1}`)
    })
  }
  return { snippets, strayDirectives }
}
