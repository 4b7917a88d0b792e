import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { docPaths } from '../support/docPaths.js'
import { tsBlocks } from '../support/tsBlocks.js'
import { optionTablesModule } from './optionTables.js'

// Every ```ts / ```typescript block in the root README, each package's
// README and each package's reference pages (packages/*/docs/*.md) is
// type-checked against the packages' current sources (through the
// "@hourglass/source" export condition: no build needed), in one TypeScript
// program with the repo's own strict options. A fragment that uses names it
// does not declare gets them from an HTML comment placed right before its
// fence (invisible on GitHub):
//
//   <!-- snippet-preamble: import express from 'express'; const app = express() -->
//   <!-- snippet: skip (pseudo-code: the shape of a report, not code) -->
//
// The preamble is prepended to the block when it is checked; skip leaves the
// block out and must give a reason. See test/README.md.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
const scratchDir = path.join(repoRoot, 'node_modules', '.cache', 'readme-snippets')

interface Snippet {
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

/** `<!-- snippet… -->` comments (README:line) that are not right before a ts block. */
const strayDirectives: string[] = []

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

function extractSnippets(readme: string): Snippet[] {
  const lines = readFileSync(path.join(repoRoot, readme), 'utf8').split(/\r?\n/)
  const snippets: Snippet[] = []
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

describe('README code blocks', () => {
  const snippets = readmePaths().flatMap(extractSnippets)
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

    // The options tables ride in the same program (one compile, not two).
    const tables = optionTablesModule()
    const tablesFile = path.join(scratchDir, 'option-tables.ts')
    writeFileSync(tablesFile, tables.source)
    const options = compilerOptions()
    const host = ts.createCompilerHost(options)
    // As `tsc` (and so `npm run typecheck`) parses: in .ts and .d.ts files
    // only the JSDoc that can change a type error (@see, @link) is parsed,
    // all of it in .js files; the diagnostics are the same, the parse of the
    // ~1,400 files these blocks import skips the rest of their comments.
    host.jsDocParsingMode = ts.JSDocParsingMode.ParseForTypeErrors
    const program = ts.createProgram({
      rootNames: [...byFile.keys(), tablesFile],
      options,
      host,
    })
    optionTableReport = optionTableDiagnostics(program, tablesFile, tables)
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

  it('every option an options table lists is a key of the options its function takes', () => {
    // Set by the type check above, which compiles the tables' module too.
    expect(optionTableReport, 'run with the type-check test').toBeDefined()
    expect(optionTableReport?.checked).toBeGreaterThan(50)
    expect(optionTableReport?.problems, `checked ${optionTableReport?.checked} options`).toEqual([])
  })
})

let optionTableReport: { checked: number; problems: string[] } | undefined

/** The diagnostics of the options tables' module, each naming the doc, section and option. */
function optionTableDiagnostics(
  program: ts.Program,
  file: string,
  tables: { source: string; options: string[] },
): { checked: number; problems: string[] } {
  const sf = program.getSourceFile(file)
  if (!sf) throw new Error(`not in the program: ${file}`)
  const lines = tables.source.split('\n')
  const problems = [
    ...program.getSyntacticDiagnostics(sf),
    ...program.getSemanticDiagnostics(sf),
  ].map((d) => {
    const line = sf.getLineAndCharacterOfPosition(d.start ?? 0).line
    const n = /^export const k(\d+)/.exec(lines[line] ?? '')?.[1]
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ')
    return n === undefined
      ? `${lines[line]}: ${message}`
      : `${tables.options[Number(n)]}: ${message}`
  })
  return { checked: tables.options.length, problems }
}
