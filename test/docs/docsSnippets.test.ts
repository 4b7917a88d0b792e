import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { isBuiltin } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// Every ```ts / ```typescript block in the packages' reference pages
// (packages/*/docs/*.md: shipped in the tarballs of the packages that list
// "docs" in `files`, and linked from their READMEs) is type-checked the way
// readmeSnippets.test.ts checks the READMEs: against the packages' current
// sources (the "@hourglass/source" export condition: no build needed), in one
// TypeScript program with the repo's own strict options, with the same
// comments right before a fence (invisible on GitHub):
//
//   <!-- snippet-preamble: declare const deadline: Deadline -->
//   <!-- snippet: skip (signature sketch: call forms, not code) -->
//
// The extraction and the program are copied from readmeSnippets.test.ts
// (kept apart so each file stays one page; merge them when both settle).
// See test/README.md.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
const scratchDir = path.join(repoRoot, 'node_modules', '.cache', 'docs-snippets')

interface Snippet {
  /** Markdown path relative to the repo root. */
  readme: string
  /** 1-based line of the block's first code line. */
  firstLine: number
  /** 1-based line of the preamble comment, if any. */
  preambleLine: number | undefined
  preamble: string | undefined
  code: string
  skip: string | undefined
}

/** `<!-- snippet… -->` comments (file:line) that are not right before a ts block. */
const strayDirectives: string[] = []

function docPaths(): string[] {
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

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/
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

function extractSnippets(readme: string): Snippet[] {
  const lines = readFileSync(path.join(repoRoot, readme), 'utf8').split(/\r?\n/)
  const snippets: Snippet[] = []
  const used = new Set<number>()
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '')
    if (!open) continue
    const [, marker = '', lang = ''] = open
    let close = i + 1
    while (close < lines.length) {
      const m = FENCE.exec(lines[close] ?? '')
      if (m && m[1]?.[0] === marker[0] && (m[1]?.length ?? 0) >= marker.length && !m[2]) break
      close++
    }
    if (lang === 'ts' || lang === 'typescript') {
      const { preamble, skip } = directivesBefore(lines, i, readme, used)
      snippets.push({
        readme,
        firstLine: i + 2,
        preambleLine: preamble?.line,
        preamble: preamble?.text,
        code: lines.slice(i + 1, close).join('\n'),
        skip,
      })
    }
    i = close
  }
  lines.forEach((line, n) => {
    if (/^\s*<!--\s*snippet/.test(line) && !used.has(n)) strayDirectives.push(`${readme}:${n + 1}`)
  })
  return snippets
}

function compilerOptions(): ts.CompilerOptions {
  const configPath = path.join(repoRoot, 'tsconfig.json')
  const { config, error } = ts.readConfigFile(configPath, ts.sys.readFile)
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'))
  // Only the options are used; `files` stops the parse from walking `include`.
  const parsed = ts.parseJsonConfigFileContent(
    { ...config, include: undefined, files: [] },
    ts.sys,
    repoRoot,
    undefined,
    configPath,
  )
  return {
    ...parsed.options,
    noEmit: true,
    skipLibCheck: true,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    incremental: false,
    customConditions: ['@hourglass/source'],
    // Each block is its own module, even one with no import or export.
    moduleDetection: ts.ModuleDetectionKind.Force,
  }
}

describe('docs/*.md code blocks', () => {
  const snippets = docPaths().flatMap(extractSnippets)
  const checked = snippets.filter((s) => s.skip === undefined)

  it('finds the blocks; every directive sits right before one and every skip gives its reason', () => {
    expect(checked.length).toBeGreaterThan(0)
    expect(strayDirectives, 'snippet comments not right before a ```ts fence').toEqual([])
    for (const s of snippets) if (s.skip !== undefined) expect(s.skip).not.toBe('')
  })

  it('type-check against the current packages', { timeout: 120_000 }, () => {
    rmSync(scratchDir, { recursive: true, force: true })
    mkdirSync(scratchDir, { recursive: true })
    // ESM, like every package here: top-level await and `import x from` work.
    writeFileSync(path.join(scratchDir, 'package.json'), '{ "type": "module" }\n')

    const byFile = new Map<string, Snippet>()
    for (const s of checked) {
      const name = `${s.readme.replace(/[\\/]/g, '_').replace(/\.md$/, '')}_L${s.firstLine}.ts`
      const file = path.join(scratchDir, name)
      const preamble = s.preamble === undefined ? '' : `${s.preamble}\n`
      writeFileSync(file, `${preamble}${s.code}\n`)
      byFile.set(path.normalize(file), s)
    }

    const program = ts.createProgram({ rootNames: [...byFile.keys()], options: compilerOptions() })
    const diagnostics: ts.Diagnostic[] = [
      ...program.getOptionsDiagnostics(),
      ...program.getGlobalDiagnostics(),
    ]
    for (const file of byFile.keys()) {
      const sf = program.getSourceFile(file)
      if (!sf) throw new Error(`not in the program: ${file}`)
      diagnostics.push(
        ...program.getSyntacticDiagnostics(sf),
        ...program.getSemanticDiagnostics(sf),
      )
    }

    const report = diagnostics.map((d) => {
      const message = ts.flattenDiagnosticMessageText(d.messageText, '\n')
      const snippet = d.file && byFile.get(path.normalize(d.file.fileName))
      if (!d.file || d.start === undefined || !snippet) {
        return `${d.file?.fileName ?? '(program)'}: TS${d.code}: ${message}`
      }
      const line = d.file.getLineAndCharacterOfPosition(d.start).line // 0-based
      const preambleLines = snippet.preamble === undefined ? 0 : snippet.preamble.split('\n').length
      const where =
        line < preambleLines
          ? `${snippet.readme}:${snippet.preambleLine} (preamble)`
          : `${snippet.readme}:${snippet.firstLine + line - preambleLines}`
      return `${where}: TS${d.code}: ${message}`
    })
    expect(report, `checked ${checked.length} blocks`).toEqual([])
  })
})

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
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '')
    if (!open) continue
    const [, marker = '', lang = ''] = open
    let close = i + 1
    while (close < lines.length) {
      const m = FENCE.exec(lines[close] ?? '')
      if (m && m[1]?.[0] === marker[0] && (m[1]?.length ?? 0) >= marker.length && !m[2]) break
      close++
    }
    if (lang === 'ts' || lang === 'typescript') {
      const code = lines.slice(i + 1, close).join('\n')
      for (const ref of ts.preProcessFile(code, true, true).importedFiles) {
        const name = packageOf(ref.fileName)
        const line = i + 2 + (code.slice(0, ref.pos).match(/\n/g)?.length ?? 0)
        if (name !== undefined) found.push({ name, line })
      }
    }
    i = close
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
