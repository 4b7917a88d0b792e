import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The packages' reference pages, `packages/<name>/docs/*.md` (repo-relative,
 * sorted): shipped in the tarballs of the packages that list "docs" in
 * `files`, and linked from their READMEs.
 */
export function docPaths(): string[] {
  const files: string[] = []
  for (const name of readdirSync(path.join(repoRoot, 'packages')).sort()) {
    const dir = path.join(repoRoot, 'packages', name, 'docs')
    if (!existsSync(dir)) continue
    for (const file of readdirSync(dir).sort()) {
      if (file.endsWith('.md')) files.push(path.join('packages', name, 'docs', file))
    }
  }
  return files
}
