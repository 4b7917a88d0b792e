import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { isBuiltin } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { docPaths } from '../support/docPaths.js'
import { tsBlocks } from '../support/tsBlocks.js'

// What a user who installs the packages from the registry meets first, read
// from the repo (no pack, no build): the packages a README's or a docs
// page's blocks import are the ones its install lines name, and the
// published declarations import only packages each package declares.
// test/typecheck.test.ts type-checks the same blocks (with the sources). See test/README.md.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

// A quick start is pasted as it stands, right after the README's install
// line: every package a ```ts block of a package's README imports must be
// named in one of the README's `npm install` commands (a further command, or
// one in the prose, marks an optional extra: `npm install openai` for the
// client example). A docs page may also name its extras itself
// (`npm install ioredis`). Preambles are the reader's own code, not the
// block's, and are not read. Node's own modules need no install.

/** The packages a markdown file's ```ts blocks import (bare specifiers), with the line of each. */
function importsOf(file: string): { name: string; line: number }[] {
  const lines = readFileSync(path.join(repoRoot, file), 'utf8').split(/\r?\n/)
  const found: { name: string; line: number }[] = []
  for (const { firstLine, code } of tsBlocks(lines)) {
    for (const ref of ts.preProcessFile(code, true, true).importedFiles) {
      const name = packageOf(ref.fileName)
      const line = firstLine + (code.slice(0, ref.pos).match(/\n/g)?.length ?? 0)
      if (name !== undefined) found.push({ name, line })
    }
  }
  return found
}

/** The packages named by the `npm install …` commands of a markdown file (shell lines and inline code). */
function installedBy(file: string): Set<string> {
  const text = readFileSync(path.join(repoRoot, file), 'utf8')
  const names = new Set<string>()
  for (const m of text.matchAll(/npm (?:install|i|add)\b([^`\n#]*)/g)) {
    for (const word of (m[1] ?? '').trim().split(/\s+/)) {
      if (word === '' || word.startsWith('-')) continue
      // `undici@7`, `@grpc/grpc-js@^1.14`: the name without its version.
      names.add(word.replace(/(.)@.*$/, '$1'))
    }
  }
  return names
}

describe('install lines', () => {
  const packages = readdirSync(path.join(repoRoot, 'packages'))
    .filter((name) => existsSync(path.join(repoRoot, 'packages', name, 'README.md')))
    .sort()

  it.each(packages)(
    'packages/%s: every package its README and docs import is installed',
    (name) => {
      const readme = path.join('packages', name, 'README.md')
      const fromReadme = installedBy(readme)
      const missing: string[] = []
      for (const { name: imported, line } of importsOf(readme)) {
        if (!fromReadme.has(imported)) missing.push(`${readme}:${line}: ${imported}`)
      }
      for (const doc of docPaths().filter((file) => file.startsWith(`packages/${name}/`))) {
        const installed = new Set([...fromReadme, ...installedBy(doc)])
        for (const { name: imported, line } of importsOf(doc)) {
          if (!installed.has(imported)) missing.push(`${doc}:${line}: ${imported}`)
        }
      }
      expect(missing, `not in an \`npm install\` line of ${readme}`).toEqual([])
    },
  )

  // The root README's "In code" block is the first a new user pastes into a
  // project of their own: it had no install line at all.
  it('README.md: every package its blocks import is installed', () => {
    const installed = installedBy('README.md')
    const missing = importsOf('README.md')
      .filter(({ name }) => !installed.has(name))
      .map(({ name, line }) => `README.md:${line}: ${name}`)
    expect(missing, 'not in an `npm install` line of README.md').toEqual([])
  })
})

// What an installed user's TypeScript reads besides the READMEs: each
// package's .d.ts files. An import there of a package the user was never
// asked to install (not in `dependencies` or `peerDependencies`) fails their
// build under `skipLibCheck: false` (otel's AttemptSpans.d.ts imported
// @hourglass/fetch). Checked from the sources, without a build: a file's
// declarations are emitted on their own (`transpileDeclaration`) only when
// the file imports an undeclared package at all, type-only imports included.
// Types the full emit infers from another package (`import("x").T`) are not
// seen here.

function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || isBuiltin(specifier))
    return undefined
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

describe('published type declarations', () => {
  const packages = readdirSync(path.join(repoRoot, 'packages'))
    .filter((name) => existsSync(path.join(repoRoot, 'packages', name, 'src')))
    .sort()

  it.each(packages)('packages/%s: its .d.ts import only packages it declares', (name) => {
    const dir = path.join(repoRoot, 'packages', name)
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
      name: string
      dependencies?: Record<string, string>
      peerDependencies?: Record<string, string>
    }
    const declared = new Set([
      manifest.name,
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ])
    const undeclaredIn = (code: string) =>
      ts
        .preProcessFile(code, true, true)
        .importedFiles.map((ref) => packageOf(ref.fileName))
        .filter((pkg): pkg is string => pkg !== undefined && !declared.has(pkg))
    const leaks: string[] = []
    const sources = readdirSync(path.join(dir, 'src'), { recursive: true, encoding: 'utf8' })
    for (const file of sources.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')).sort()) {
      const code = readFileSync(path.join(dir, 'src', file), 'utf8')
      if (undeclaredIn(code).length === 0) continue
      const { outputText } = ts.transpileDeclaration(code, {
        fileName: file,
        compilerOptions: { module: ts.ModuleKind.NodeNext, target: ts.ScriptTarget.ES2022 },
      })
      for (const pkg of undeclaredIn(outputText)) leaks.push(`packages/${name}/src/${file}: ${pkg}`)
    }
    expect(
      leaks,
      `imported by the declarations, missing from ${manifest.name}'s dependencies`,
    ).toEqual([])
  })
})
